//! The HTTP channel adapter over real sockets on 127.0.0.1: what each answer promises, the
//! limits that protect the server, and what the outbound side does with each kind of failure.
//! (The bearer token, which needs the environment, has its own file: `http_auth.rs`.)

#![cfg(feature = "http")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::{post, put};
use eip_adapters::http::{
    HttpInbound, HttpInboundConfig, HttpInboundServer, HttpOutbound, HttpOutboundConfig,
    HttpOutboundError, OutboundMethod, UrlTemplate,
};
use eip_core::channel::{DeadLetterChannel, InvalidMessageChannel, JsonType, PointToPoint};
use eip_core::endpoint::{Consumer, RedeliveryPolicy};
use eip_core::message::DeathReason;
use eip_core::store::durable::{Durable, StoreConfig};
use eip_core::{Message, MessageBus};
use hyper_util::rt::TokioIo;
use tower::ServiceExt;

const WAIT: Duration = Duration::from_secs(3);

fn config() -> HttpInboundConfig {
    let mut config = HttpInboundConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), "/orders");
    config.accept_wait = Duration::from_millis(50);
    config.header_read_timeout = Duration::from_millis(300);
    config.request_timeout = Duration::from_secs(2);
    config
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn json(response: reqwest::Response) -> serde_json::Value {
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

/// An inbound server for `channel`, bound and listening.
async fn serve(config: HttpInboundConfig, channel: PointToPoint) -> HttpInboundServer {
    HttpInbound::new(config, channel)
        .unwrap()
        .bind()
        .await
        .unwrap()
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/orders")
}

#[tokio::test]
async fn an_accepted_request_is_answered_202_with_the_id_of_the_message_on_the_channel() {
    let orders = PointToPoint::new("orders", 10).unwrap();
    let mut config = config();
    config.copy_headers = vec!["x-customer".into()];
    let server = serve(config, orders.clone()).await;
    let response = client()
        .post(url(server.local_addr()))
        .header("content-type", "application/json")
        .header("x-customer", "acme")
        .header("x-other", "not copied")
        .body(r#"{"sku": 7}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let answer: serde_json::Value = json(response).await;
    assert_eq!(answer["outcome"], "accepted");

    let delivery = orders
        .receiver()
        .try_recv()
        .expect("on the channel already");
    let msg = delivery.message();
    assert_eq!(answer["id"], msg.id().to_string());
    assert_eq!(msg.payload_str(), Some(r#"{"sku": 7}"#));
    assert_eq!(msg.content_type().unwrap(), Some("application/json"));
    assert_eq!(
        msg.headers().get("x-customer").and_then(|v| v.as_str()),
        Some("acme")
    );
    assert!(!msg.headers().contains("x-other"));
    delivery.ack();
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_answered_413_and_never_reaches_the_channel() {
    let orders = PointToPoint::new("orders", 10).unwrap();
    let mut config = config();
    config.body_limit = 16;
    let server = serve(config, orders.clone()).await;
    let big = client()
        .post(url(server.local_addr()))
        .body(vec![b'x'; 1000])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
    // Streamed without a length, the limit holds too.
    let addr = server.local_addr();
    let answer = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let head = "POST /orders HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
        stream.write_all(head.as_bytes()).unwrap();
        for _ in 0..10 {
            let chunk = format!("64\r\n{}\r\n", "y".repeat(100));
            if stream.write_all(chunk.as_bytes()).is_err() {
                break; // the server answered and closed already
            }
        }
        let _ = stream.write_all(b"0\r\n\r\n");
        let mut answer = vec![0; 64];
        let n = stream.read(&mut answer).unwrap();
        answer.truncate(n);
        answer
    })
    .await
    .unwrap();
    let n = answer.len();
    assert!(
        answer[..n].starts_with(b"HTTP/1.1 413"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );
    assert_eq!(orders.stats().depth, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_full_channel_is_answered_429_with_retry_after_without_buffering() {
    let orders = PointToPoint::new("orders", 1).unwrap();
    let server = serve(config(), orders.clone()).await;
    let first = client()
        .post(url(server.local_addr()))
        .body("one")
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 202);
    let started = Instant::now();
    let second = client()
        .post(url(server.local_addr()))
        .body("two")
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "1");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused after accept_wait"
    );
    assert_eq!(orders.stats().depth, 1, "only the first is held");
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_trickling_its_headers_is_cut_off_by_the_header_timeout() {
    let orders = PointToPoint::new("orders", 10).unwrap();
    let server = serve(config(), orders.clone()).await;
    let addr = server.local_addr();
    let started = Instant::now();
    let (closed, answer) = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let request = b"POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\nhi";
        for byte in request {
            if stream.write_all(&[*byte]).is_err() || started.elapsed() > WAIT {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut answer = Vec::new();
        // End of stream (or a reset) within the read timeout: the server closed it.
        let closed = match stream.read_to_end(&mut answer) {
            Ok(_) => true,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        };
        (closed, answer)
    })
    .await
    .unwrap();
    assert!(closed, "the connection was closed");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "closed after about the header timeout (300 ms), not after the whole request: {:?}",
        started.elapsed()
    );
    assert!(!String::from_utf8_lossy(&answer).contains("202"));
    assert_eq!(orders.stats().depth, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_the_header_timeout() {
    let orders = PointToPoint::new("orders", 10).unwrap();
    let server = serve(config(), orders.clone()).await;
    let addr = server.local_addr();
    let (answer, idle_for) = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let request = "POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi";
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let mut buf = [0; 512];
        // The answer, then the connection sits idle until the server closes it.
        let mut answered = None;
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    answered.get_or_insert_with(Instant::now);
                }
                Err(e) => panic!("not closed within {WAIT:?}: {e}"),
            }
        }
        (answer, answered.unwrap().elapsed())
    })
    .await
    .unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 202"));
    assert!(
        idle_for < Duration::from_secs(2),
        "closed after {idle_for:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn on_a_durable_channel_202_means_the_message_is_on_disk() {
    let dir = std::env::temp_dir().join(format!(
        "eip-http-durable-{}-{}",
        std::process::id(),
        eip_core::MessageId::new()
    ));
    let open = || {
        let store = Arc::new(Durable::open(&dir, StoreConfig::default()).unwrap());
        PointToPoint::builder("orders")
            .capacity(10)
            .store(store)
            .build()
            .unwrap()
    };
    let id = {
        let orders = open();
        let server = serve(config(), orders.clone()).await;
        let response = client()
            .post(url(server.local_addr()))
            .body("kept")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
        let id = json(response).await["id"].as_str().unwrap().to_owned();
        server.shutdown().await;
        id
        // The channel and its store go here, with no flush: as if the process stopped.
    };
    let orders = open();
    let delivery = orders
        .receiver()
        .try_recv()
        .expect("still there after a restart");
    assert_eq!(delivery.message().id().to_string(), id);
    assert_eq!(delivery.message().payload_str(), Some("kept"));
    delivery.ack();
    drop(orders);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_json_route_refuses_other_content_types_415_and_malformed_bodies_400() {
    let orders = PointToPoint::new("orders", 10).unwrap();
    let mut config = config();
    config.json = true;
    let server = serve(config, orders.clone()).await;
    let post = |content_type: &'static str, body: &'static str| {
        client()
            .post(url(server.local_addr()))
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    assert_eq!(post("text/plain", "{}").await.unwrap().status(), 415);
    let malformed = post("application/json", "{\"sku\": ").await.unwrap();
    assert_eq!(malformed.status(), 400);
    assert!(
        malformed
            .text()
            .await
            .unwrap()
            .contains("EOF while parsing")
    );
    let fine = post("application/json; charset=utf-8", "{\"sku\": 1}").await;
    assert_eq!(fine.unwrap().status(), 202);
    assert_eq!(orders.stats().depth, 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_datatype_channel_diverts_malformed_json_itself_and_the_answer_says_so() {
    let invalid = InvalidMessageChannel::new("orders.invalid", 10).unwrap();
    let orders = PointToPoint::builder("orders")
        .capacity(10)
        .datatype(JsonType::<serde_json::Value>::new(), invalid.clone())
        .build()
        .unwrap();
    let mut config = config();
    config.json = true;
    let server = serve(config, orders.clone()).await;
    let response = client()
        .post(url(server.local_addr()))
        .header("content-type", "application/json")
        .body("{\"sku\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let answer: serde_json::Value = json(response).await;
    assert_eq!(answer["outcome"], "invalid");
    assert!(answer["reason"].as_str().unwrap().contains("EOF"));
    let diverted = invalid
        .receiver()
        .try_recv()
        .expect("on the invalid channel");
    assert_eq!(answer["id"], diverted.message().id().to_string());
    let death = diverted.message().death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::Invalid);
    assert_eq!(orders.stats().depth, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn request_reply_answers_200_with_the_reply_and_504_without_one() {
    let bus = MessageBus::new();
    let quotes = bus.create_point_to_point("quotes").unwrap();
    let replier_bus = bus.clone();
    let mut requests = quotes.receiver();
    let replier = tokio::spawn(async move {
        while let Some(delivery) = requests.recv().await {
            let request = delivery.message().clone();
            delivery.ack();
            if request.payload_str() == Some("silence") {
                continue;
            }
            let reply = Message::builder(format!("quote for {}", request.payload_str().unwrap()))
                .content_type("text/plain")
                .build();
            replier_bus.reply(&request, reply).await.unwrap();
        }
    });
    let inbound =
        HttpInbound::request_reply(config(), &bus, "quotes", Duration::from_millis(300)).unwrap();
    let server = inbound.bind().await.unwrap();
    let answered = client()
        .post(url(server.local_addr()))
        .body("10 widgets")
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    assert_eq!(answered.headers()["content-type"], "text/plain");
    assert_eq!(answered.text().await.unwrap(), "quote for 10 widgets");

    let started = Instant::now();
    let unanswered = client()
        .post(url(server.local_addr()))
        .body("silence")
        .send()
        .await
        .unwrap();
    assert_eq!(unanswered.status(), 504);
    assert!(started.elapsed() < Duration::from_secs(1));
    server.shutdown().await;
    replier.abort();
}

#[tokio::test]
async fn request_reply_to_an_unknown_channel_is_refused_at_start() {
    let bus = MessageBus::new();
    let err = HttpInbound::request_reply(config(), &bus, "nowhere", Duration::from_millis(300))
        .unwrap_err();
    assert!(err.to_string().contains("nowhere"), "{err}");
}

// ---- outbound ----

/// A test server on 127.0.0.1: every request is recorded and answered by `answer`.
#[derive(Clone, Default)]
struct Recorder {
    requests: Arc<Mutex<Vec<(String, HeaderMap, Bytes)>>>,
}

impl Recorder {
    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

async fn downstream(
    answer: impl Fn(usize) -> (u16, String) + Clone + Send + Sync + 'static,
) -> (SocketAddr, Recorder) {
    let recorder = Recorder::default();
    let seen = recorder.clone();
    let handler = move |uri: axum::http::Uri, headers: HeaderMap, body: Bytes| {
        let seen = seen.clone();
        let answer = answer.clone();
        async move {
            let n = {
                let mut requests = seen.requests.lock().unwrap();
                requests.push((uri.path().to_owned(), headers, body));
                requests.len()
            };
            let (status, text) = answer(n);
            (AxumStatus::from_u16(status).unwrap(), text)
        }
    };
    let router = axum::Router::new()
        .route("/items/{id}", put(handler.clone()))
        .route("/items", post(handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let router = router.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: hyper::Request<_>| {
                    router.clone().oneshot(req.map(Body::new))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, recorder)
}

fn outbound(url: &str, method: OutboundMethod) -> HttpOutbound {
    let mut config = HttpOutboundConfig::new(UrlTemplate::parse(url).unwrap());
    config.method = method;
    config.connect_timeout = Duration::from_millis(500);
    config.request_timeout = Duration::from_secs(2);
    HttpOutbound::new(config).unwrap()
}

fn channel(attempts: u32) -> (PointToPoint, DeadLetterChannel) {
    let dead = DeadLetterChannel::new("dead-letters", 10).unwrap();
    let channel = PointToPoint::builder("shipments")
        .capacity(10)
        .dead_letter_channel(dead.clone())
        .redelivery(RedeliveryPolicy::fixed(attempts, Duration::from_millis(20)))
        .build()
        .unwrap();
    (channel, dead)
}

async fn eventually(mut check: impl FnMut() -> bool) {
    tokio::time::timeout(WAIT, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("condition not met in time");
}

#[tokio::test]
async fn outbound_retries_a_failing_server_and_delivers_once_when_it_recovers() {
    let (addr, recorder) = downstream(|n| {
        if n <= 2 {
            (503, "warming up".into())
        } else {
            (201, "created".into())
        }
    })
    .await;
    let (shipments, dead) = channel(5);
    let service = outbound(&format!("http://{addr}/items/{{id}}"), OutboundMethod::Put);
    let consumer = Consumer::new(shipments.receiver(), service)
        .permanent_errors(HttpOutboundError::is_permanent)
        .spawn();
    let msg = Message::builder("one crate")
        .content_type("text/plain")
        .build();
    shipments.send(msg.clone()).await.unwrap();
    eventually(|| shipments.stats().acked == 1).await;
    consumer.shutdown().await;

    let requests = recorder.requests.lock().unwrap();
    assert_eq!(requests.len(), 3, "two 503s, then the success");
    for (path, headers, body) in requests.iter() {
        assert_eq!(path, &format!("/items/{}", msg.id()));
        assert_eq!(headers["content-type"], "text/plain");
        assert_eq!(headers["message-id"], msg.id().to_string().as_str());
        assert_eq!(body.as_ref(), b"one crate");
    }
    assert_eq!(dead.stats().depth, 0, "nothing dead-lettered");
    assert_eq!(shipments.stats().depth, 0, "nothing left");
}

#[tokio::test]
async fn outbound_dead_letters_a_4xx_at_once_with_the_status_and_an_excerpt_of_the_body() {
    let detail = format!("field `qty` is required{}", "!".repeat(2000));
    let (addr, recorder) = downstream(move |_| (400, detail.clone())).await;
    let (shipments, dead) = channel(5);
    let service = outbound(&format!("http://{addr}/items"), OutboundMethod::Post);
    let consumer = Consumer::new(shipments.receiver(), service)
        .permanent_errors(HttpOutboundError::is_permanent)
        .spawn();
    shipments.send(Message::new("{}")).await.unwrap();
    let buried = tokio::time::timeout(WAIT, dead.receiver().recv())
        .await
        .unwrap()
        .unwrap();
    consumer.shutdown().await;

    assert_eq!(recorder.count(), 1, "never retried");
    let death = buried.message().death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::Rejected);
    assert_eq!(death.channel, "shipments");
    let error = death.error.unwrap();
    assert!(error.contains("400"), "{error}");
    assert!(error.contains("field `qty` is required"), "{error}");
    assert!(
        error.len() < 700,
        "an excerpt, not the whole body: {}",
        error.len()
    );
}

#[tokio::test]
async fn outbound_retries_a_refused_connection_then_dead_letters_it() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let (shipments, dead) = channel(3);
    let service = outbound(&format!("http://{closed}/items"), OutboundMethod::Post);
    let consumer = Consumer::new(shipments.receiver(), service)
        .permanent_errors(HttpOutboundError::is_permanent)
        .spawn();
    let msg = Message::new("lost?");
    shipments.send(msg.clone()).await.unwrap();
    let buried = tokio::time::timeout(WAIT, dead.receiver().recv())
        .await
        .unwrap()
        .unwrap();
    consumer.shutdown().await;

    assert_eq!(
        buried.message().id(),
        msg.id(),
        "the same message, not lost"
    );
    let death = buried.message().death().unwrap().unwrap();
    assert_eq!(death.reason, DeathReason::MaxRedeliveries);
    assert_eq!(
        buried.message().redelivery_count().unwrap(),
        2,
        "three attempts"
    );
    let error = death.error.unwrap();
    assert!(error.contains("cannot connect"), "{error}");
}
