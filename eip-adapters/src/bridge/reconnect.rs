//! The connection an outbound bridge publishes on: made on demand, given up after a failure,
//! made again no sooner than a [`Backoff`] allows.

use std::future::Future;
use std::time::Instant;

use tokio::sync::Mutex;

use super::{Backoff, BridgeError, ConnectionHealth};

/// What [`ConnectionHealth`] keeps of a connection found lost.
const LOST: &str = "the connection was lost";

/// A connection (or client) `T` shared by the calls of an outbound bridge.
///
/// [`get`](Self::get) hands out the live connection with its *generation*, or opens a new one;
/// a call that saw its connection fail [`forget`](Self::forget)s that generation, so one failure
/// does not throw away a newer connection another call already made. After an open fails, calls
/// fail at once ("next attempt in …") until the backoff's wait is over: a broker that is down
/// costs a retry of the message, not a storm of connection attempts. A connection made after a
/// loss or a failed attempt is logged as a warning (`bridge reconnected`), like the loss.
pub struct Reconnect<T> {
    broker: String,
    state: Mutex<State<T>>,
    health: ConnectionHealth,
}

struct State<T> {
    live: Option<(u64, T)>,
    generation: u64,
    backoff: Backoff,
    retry_at: Option<Instant>,
    /// A connection was lost or an attempt failed since the last one made: the next one made
    /// is a reconnection, said at the level the loss was.
    down: bool,
}

impl<T> std::fmt::Debug for Reconnect<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconnect")
            .field("broker", &self.broker)
            .finish()
    }
}

impl<T> Reconnect<T> {
    /// No connection yet to `broker` (its description, for errors).
    pub fn new(broker: impl Into<String>, backoff: Backoff) -> Self {
        Reconnect {
            broker: broker.into(),
            state: Mutex::new(State {
                live: None,
                generation: 0,
                backoff,
                retry_at: None,
                down: false,
            }),
            health: ConnectionHealth::new(),
        }
    }

    /// The record of this connection's ups and downs, for the flow's watchers.
    pub fn health(&self) -> ConnectionHealth {
        self.health.clone()
    }

    /// The live connection, as `view` sees it, with its generation; a connection `is_lost`
    /// says is gone is dropped first. Without one, `open` makes one (unless the backoff's wait
    /// after a failed attempt is not over).
    pub async fn get<R, Fut>(
        &self,
        is_lost: impl Fn(&T) -> bool,
        view: impl Fn(&T) -> R,
        open: impl FnOnce() -> Fut,
    ) -> Result<(u64, R), BridgeError>
    where
        Fut: Future<Output = Result<T, BridgeError>>,
    {
        let mut state = self.state.lock().await;
        if let Some((generation, live)) = &state.live {
            if !is_lost(live) {
                return Ok((*generation, view(live)));
            }
            tracing::warn!(broker = %self.broker, "bridge: connection lost, reconnecting");
            self.health.failed(&LOST);
            state.live = None;
            state.down = true;
        }
        if let Some(at) = state.retry_at
            && Instant::now() < at
        {
            return Err(BridgeError::Connection {
                broker: self.broker.clone(),
                reason: format!("not connected; next attempt in {:?}", at - Instant::now()),
            });
        }
        match open().await {
            Ok(live) => {
                if std::mem::take(&mut state.down) {
                    tracing::warn!(broker = %self.broker, "bridge reconnected");
                }
                state.backoff.reset();
                state.retry_at = None;
                self.health.connected();
                state.generation += 1;
                let generation = state.generation;
                let seen = view(&live);
                state.live = Some((generation, live));
                Ok((generation, seen))
            }
            Err(error) => {
                let wait = state.backoff.next_wait();
                state.retry_at = Some(Instant::now() + wait);
                state.down = true;
                self.health.failed(&error);
                Err(error)
            }
        }
    }

    /// Drops connection `generation`, unless a newer one replaced it already.
    pub async fn forget(&self, generation: u64) {
        let mut state = self.state.lock().await;
        if matches!(&state.live, Some((g, _)) if *g == generation) {
            tracing::warn!(broker = %self.broker, "bridge: connection lost, reconnecting");
            self.health.failed(&LOST);
            state.live = None;
            state.down = true;
        }
    }
}
