//! A TCP proxy on 127.0.0.1 that a test controls, between a bridge and its broker: it forwards
//! both ways until the test [cuts](Proxy::cut) every connection (a network failure as the
//! client sees it) or [stalls](Proxy::stall) them (bytes stop flowing, connections stay open).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A proxy to one upstream address; dropped, it stops listening and cuts everything.
pub struct Proxy {
    address: SocketAddr,
    /// Bumped by `cut`: every connection made before it is closed.
    generation: watch::Sender<u64>,
    stalled: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on 127.0.0.1 (a free port) and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the proxy listens");
        let address = listener.local_addr().expect("its address");
        let (generation, _) = watch::channel(0u64);
        let stalled = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let task = {
            let generation = generation.clone();
            let stalled = stalled.clone();
            let accepted = accepted.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let cut = generation.subscribe();
                    let stalled = stalled.clone();
                    tokio::spawn(async move {
                        if let Ok(server) = TcpStream::connect(upstream).await {
                            pipe(client, server, cut, stalled).await;
                        }
                    });
                }
            })
        };
        Proxy {
            address,
            generation,
            stalled,
            accepted,
            task,
        }
    }

    /// Where clients connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Closes every connection open now; new ones are forwarded again.
    pub fn cut(&self) {
        self.generation.send_modify(|g| *g += 1);
    }

    /// Stops (`true`) or resumes (`false`) moving bytes on every connection.
    pub fn stall(&self, stalled: bool) {
        self.stalled.store(stalled, Ordering::SeqCst);
    }

    /// How many connections the proxy has taken.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.task.abort();
    }
}

async fn pipe(
    client: TcpStream,
    server: TcpStream,
    mut cut: watch::Receiver<u64>,
    stalled: Arc<AtomicBool>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = copy(&mut client_read, &mut server_write, &stalled);
    let down = copy(&mut server_read, &mut client_write, &stalled);
    tokio::select! {
        _ = cut.changed() => {}
        _ = up => {}
        _ = down => {}
    }
}

async fn copy(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    stalled: &AtomicBool,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        while stalled.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                while stalled.load(Ordering::SeqCst) {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                if to.write_all(&buffer[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
