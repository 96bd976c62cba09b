//! The bus as the namespace that routers look names up in.
//!
//! Routing knows names only through [`TargetResolver`], so that `router` does not depend on
//! `bus`; here the bus implements it, and the recipient list gets its bus-taking constructor.

use super::MessageBus;
use crate::router::{RecipientList, Target, TargetResolver};

/// The bus's channels and exchanges; an unknown name's error suggests the closest one.
impl TargetResolver for MessageBus {
    fn resolve(&self, name: &str) -> Result<Target, String> {
        self.target(name).map_err(|e| e.to_string())
    }
}

impl RecipientList {
    /// A list read from each message's `header` (comma-separated names of channels or
    /// exchanges), resolved through `bus`, dead-lettering to the bus's dead letter channel.
    pub fn from_header(name: &str, header: &str, bus: &MessageBus) -> Self {
        let dead_letters = bus.dead_letter_channel().clone();
        RecipientList::from_header_with(name, header, bus.clone(), dead_letters)
    }
}
