//! Pausing a flow's adapters and bridges (EIP's Detour, at its simplest): one
//! [`PauseSwitch`] per adapter or bridge, by name, made when the flow is compiled and handed to
//! the adapter when it connects.
//!
//! What a paused adapter does depends on its direction, and nothing accepted is lost either
//! way:
//! - an outbound adapter or bridge takes nothing new from its channel, whose messages wait
//!   there in order (the channel's capacity is the backpressure); what it was sending finishes;
//! - an inbound bridge reads nothing new from its broker, which keeps what was not read; the
//!   connection stays up;
//! - an `http-in` adapter answers `503 Service Unavailable` with `Retry-After`, so clients
//!   retry later;
//! - the other inbound adapters (`file-in`, `timer`, `sql-in`) wait before their next send:
//!   a file is not claimed, a tick not fired, a poll not made until resumed.
//!
//! Resumed, each takes up where it stopped. A pause lasts until resumed, or until the process
//! ends unless the flow keeps its runtime changes (see [`crate::control`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use eip_core::endpoint::PauseSwitch;

/// The pause switches of a flow's adapters and bridges, by name; clones share them.
#[derive(Debug, Clone, Default)]
pub struct Detours(Arc<Mutex<HashMap<String, PauseSwitch>>>);

impl Detours {
    /// The switch of the adapter or bridge `name` (made on first use).
    pub fn switch(&self, name: &str) -> PauseSwitch {
        let mut switches = self.0.lock().unwrap_or_else(|p| p.into_inner());
        switches.entry(name.to_owned()).or_default().clone()
    }

    /// Whether the adapter or bridge `name` is paused now.
    pub fn is_paused(&self, name: &str) -> bool {
        let switches = self.0.lock().unwrap_or_else(|p| p.into_inner());
        switches.get(name).is_some_and(PauseSwitch::is_paused)
    }
}
