//! Pausing a consumer (EIP's Detour, at its simplest: take a consumer out of the way and put it
//! back). A paused consumer takes no new delivery: the channel's messages wait there, in order,
//! with the channel's capacity as the backpressure on whoever sends; what it was processing
//! when paused finishes as usual. Resumed, it takes the next waiting message. A paused
//! consumer still stops when told to.

use std::sync::Arc;

use tokio::sync::watch;

/// Pauses and resumes the consumers given its [`gate`](Self::gate); clones share the switch.
#[derive(Debug, Clone)]
pub struct PauseSwitch {
    paused: Arc<watch::Sender<bool>>,
}

impl Default for PauseSwitch {
    fn default() -> Self {
        PauseSwitch {
            paused: Arc::new(watch::channel(false).0),
        }
    }
}

impl PauseSwitch {
    /// A switch, not paused.
    pub fn new() -> Self {
        PauseSwitch::default()
    }

    /// Pauses; whether it was running.
    pub fn pause(&self) -> bool {
        !self.paused.send_replace(true)
    }

    /// Resumes; whether it was paused.
    pub fn resume(&self) -> bool {
        self.paused.send_replace(false)
    }

    /// Whether it is paused now.
    pub fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    /// What a [`Consumer`](super::Consumer) watches ([`Consumer::pause_gate`](super::Consumer::pause_gate)).
    pub fn gate(&self) -> PauseGate {
        PauseGate(self.paused.subscribe())
    }
}

/// The consumer's side of a [`PauseSwitch`].
#[derive(Debug, Clone)]
pub struct PauseGate(pub(super) watch::Receiver<bool>);

impl PauseGate {
    /// Whether its switch is paused now.
    pub fn is_paused(&self) -> bool {
        *self.0.borrow()
    }

    /// Completes once its switch is not paused: at once if it is not, and when the switch is
    /// gone (nothing can pause it any more).
    pub fn resumed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut paused = self.0.clone();
        async move {
            let _ = paused.wait_for(|p| !*p).await;
        }
    }
}
