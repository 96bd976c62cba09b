//! A subscriber's handle on a publish-subscribe channel.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::channel::delivery::Receiver;

/// A subscriber's handle: a [`Receiver`] over its subscription (it derefs to one).
pub struct Subscriber {
    receiver: Receiver,
    detach: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Subscriber {
    pub(crate) fn new(receiver: Receiver, detach: Option<Box<dyn FnOnce() + Send + Sync>>) -> Self {
        Subscriber { receiver, detach }
    }

    /// Whether the subscription outlives this handle.
    pub fn is_durable(&self) -> bool {
        self.detach.is_none()
    }
}

impl Deref for Subscriber {
    type Target = Receiver;
    #[inline]
    fn deref(&self) -> &Receiver {
        &self.receiver
    }
}

impl DerefMut for Subscriber {
    #[inline]
    fn deref_mut(&mut self) -> &mut Receiver {
        &mut self.receiver
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        if let Some(detach) = self.detach.take() {
            // Back into the subscription first, so ending it discards them with the rest
            // rather than finding them in a closed queue later.
            self.receiver.return_prefetched();
            detach();
        }
    }
}

impl fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("channel", &self.receiver.channel())
            .field("durable", &self.is_durable())
            .finish()
    }
}
