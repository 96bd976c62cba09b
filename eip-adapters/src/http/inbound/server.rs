//! The HTTP/1.1 server under the inbound adapter: connection limits that a route can not set.
//!
//! - at most `max_connections` connections at once: past that the server stops accepting and
//!   new ones wait in the kernel's backlog;
//! - hyper's header read timeout: a client that trickles its headers (slowloris), or a
//!   kept-alive connection idle past it, is closed;
//! - a whole-request timeout (body read and send included), answered 408.
//!
//! Shutdown stops accepting, lets each connection finish the request it is in, and closes it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use eip_core::log::Escaped;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tower::ServiceExt;

/// How long connections get to finish their request at shutdown.
const GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) header_read_timeout: Duration,
    pub(super) request_timeout: Duration,
    pub(super) max_connections: usize,
}

/// A running inbound adapter.
#[derive(Debug)]
pub struct HttpInboundServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl HttpInboundServer {
    /// The address it listens on (with the port chosen when the configuration said 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, lets requests in progress finish (up to 5 s), and returns when every
    /// connection is closed.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        if let Err(e) = self.task.await {
            tracing::error!(error = %Escaped(&e), "HTTP inbound server task failed");
        }
    }
}

pub(super) fn start(
    listener: TcpListener,
    router: axum::Router,
    limits: Limits,
) -> std::io::Result<HttpInboundServer> {
    let local_addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, router, limits, stopped));
    Ok(HttpInboundServer {
        local_addr,
        stop,
        task,
    })
}

async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = stopped.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            (stream, permit) = next_connection(&listener, &permits) => {
                let router = router.clone();
                let stopped = stopped.clone();
                connections.spawn(serve(stream, permit, router, limits, stopped));
            }
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// The next accepted connection with its permit, once a permit is free.
async fn next_connection(
    listener: &TcpListener,
    permits: &Arc<Semaphore>,
) -> (TcpStream, OwnedSemaphorePermit) {
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            // Never closed; wait for shutdown instead of spinning.
            std::future::pending::<()>().await;
            continue;
        };
        match listener.accept().await {
            Ok((stream, _)) => return (stream, permit),
            Err(e) => {
                // Out of file descriptors and the like: pause rather than spin.
                tracing::warn!(error = %Escaped(&e), "HTTP inbound: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn serve(
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    router: axum::Router,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let router = router.clone();
        async move {
            let request = request.map(axum::body::Body::new);
            let answer = tokio::time::timeout(limits.request_timeout, router.oneshot(request));
            Ok::<Response, Infallible>(match answer.await {
                Ok(Ok(response)) => response,
                Ok(Err(never)) => match never {},
                Err(_) => (StatusCode::REQUEST_TIMEOUT, "request took too long\n").into_response(),
            })
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let mut connection = pin!(builder.serve_connection(TokioIo::new(stream), service));
    let result = tokio::select! {
        result = connection.as_mut() => result,
        _ = stopped.changed() => {
            connection.as_mut().graceful_shutdown();
            match tokio::time::timeout(GRACE, connection.as_mut()).await {
                Ok(result) => result,
                Err(_) => Ok(()),
            }
        }
    };
    if let Err(e) = result {
        // Header timeouts, resets and malformed requests: the client's doing, not ours.
        tracing::debug!(error = %Escaped(&e), "HTTP inbound: connection ended with an error");
    }
}
