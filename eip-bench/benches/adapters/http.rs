//! `http in`: an [`HttpInbound`] against a bare axum handler.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use axum::http::{HeaderMap, StatusCode};
use eip_adapters::http::{HttpInbound, HttpInboundConfig};
use eip_bench::{alternating_medians, per_item, print_compare};
use eip_core::Message;
use eip_core::channel::PointToPoint;

use crate::CHANNEL_CAPACITY;

/// Concurrent keep-alive connections of the load generator.
const HTTP_CONNECTIONS: usize = 16;

/// Runs the `http in` comparison and prints its compare line.
pub fn compare(rt: &Runtime, measuring: bool, rounds: usize) {
    let per_connection = if measuring { 500 } else { 20 };
    let requests = per_connection * HTTP_CONNECTIONS;
    let (eip_ns, raw_ns) = alternating_medians(
        rounds,
        |round| {
            let ns = per_item(rt.block_on(http_eip(per_connection)), requests);
            eprintln!("  http in round {round}: eip {ns:.0} ns/request");
            ns
        },
        |round| {
            let ns = per_item(rt.block_on(http_raw(per_connection)), requests);
            eprintln!("  http in round {round}: raw {ns:.0} ns/request");
            ns
        },
    );
    print_compare(
        "http in",
        eip_ns,
        raw_ns,
        "bare axum handler + tokio mpsc, 16 keep-alive connections",
    );
}

const BODY: &str = r#"{"sku":7,"qty":3,"customer":"acme"}"#;

/// [`HTTP_CONNECTIONS`] tasks sharing one keep-alive client, each posting `per_connection`
/// requests one after the other, every answer checked to be 202.
async fn load(addr: SocketAddr, per_connection: usize) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(HTTP_CONNECTIONS)
        .build()
        .expect("a client");
    let url = format!("http://{addr}/orders");
    let tasks: Vec<_> = (0..HTTP_CONNECTIONS)
        .map(|_| {
            let client = client.clone();
            let url = url.clone();
            tokio::spawn(async move {
                for _ in 0..per_connection {
                    let response = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(BODY)
                        .send()
                        .await
                        .expect("an answer");
                    assert_eq!(response.status(), 202);
                    response.bytes().await.expect("the answer's body");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a load task finishes");
    }
}

/// The time for the load through [`HttpInbound`] into a channel, until every request is
/// answered and every message acked.
async fn http_eip(per_connection: usize) -> Duration {
    let requests = per_connection * HTTP_CONNECTIONS;
    let channel = PointToPoint::new("orders", CHANNEL_CAPACITY).expect("channel builds");
    let config = HttpInboundConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), "/orders");
    let server = HttpInbound::new(config, channel.clone())
        .expect("inbound config")
        .bind()
        .await
        .expect("the server binds");
    let mut receiver = channel.receiver();
    let consumer = tokio::spawn(async move {
        for _ in 0..requests {
            let delivery = receiver.recv().await.expect("the channel stays open");
            assert_eq!(delivery.message().payload().len(), BODY.len());
            delivery.ack();
        }
    });
    let started = Instant::now();
    load(server.local_addr(), per_connection).await;
    consumer.await.expect("the consumer finishes");
    let elapsed = started.elapsed();
    server.shutdown().await;
    elapsed
}

/// The same through a bare axum handler and a tokio mpsc.
async fn http_raw(per_connection: usize) -> Duration {
    let requests = per_connection * HTTP_CONNECTIONS;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Message>(CHANNEL_CAPACITY);
    let router = axum::Router::new().route(
        "/orders",
        axum::routing::post(move |headers: HeaderMap, body: bytes::Bytes| {
            let tx = tx.clone();
            async move {
                let mut msg = Message::builder(body);
                if let Some(kind) = headers.get("content-type").and_then(|v| v.to_str().ok()) {
                    msg = msg.content_type(kind);
                }
                let msg = msg.build();
                let id = msg.id().to_string();
                match tx.send(msg).await {
                    Ok(()) => (
                        StatusCode::ACCEPTED,
                        format!(r#"{{"id":"{id}","outcome":"accepted"}}"#),
                    ),
                    Err(_) => (StatusCode::SERVICE_UNAVAILABLE, String::new()),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("the raw server binds");
    let addr = listener.local_addr().expect("its address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("the raw server runs");
    });
    let consumer = tokio::spawn(async move {
        for _ in 0..requests {
            let msg = rx.recv().await.expect("a message");
            assert_eq!(msg.payload().len(), BODY.len());
        }
    });
    let started = Instant::now();
    load(addr, per_connection).await;
    consumer.await.expect("the consumer finishes");
    let elapsed = started.elapsed();
    let _ = stop.send(());
    let _ = server.await;
    elapsed
}
