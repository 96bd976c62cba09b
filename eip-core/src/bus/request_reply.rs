//! Request-Reply with Return Address and Correlation Identifier.
//!
//! [`MessageBus::request`] makes a temporary point-to-point reply channel (`reply.<request id>`),
//! writes its name into the request's `return-address` header, sends the request and waits, up
//! to a timeout, for the reply. The replier answers with [`MessageBus::reply`], which sends to the
//! return address and sets the reply's `correlation-id` to the request's id. A reply that does
//! not correlate is rejected to the dead letter channel. The reply channel is removed when the
//! request completes or times out; a reply arriving after that finds no channel and its sender
//! gets an unknown-channel error.

use std::time::Duration;

use super::{BusError, MessageBus};
use crate::channel::{Outcome, PointToPoint};
use crate::message::{HeaderError, Message, names};

/// Why a request got no reply.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// No correlated reply came within the timeout.
    #[error("no reply to request {request} on `{channel}` within {timeout:?}")]
    Timeout {
        /// The request's id.
        request: String,
        /// The channel the request was sent to.
        channel: String,
        /// How long the requestor waited.
        timeout: Duration,
    },
    /// The request has no return address to reply to.
    #[error("message {request} has no return address")]
    NoReturnAddress {
        /// The request's id.
        request: String,
    },
    /// The return address header is unreadable.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// The bus refused the request or the reply.
    #[error(transparent)]
    Bus(#[from] BusError),
}

/// Removes the temporary reply channel however the request ends.
struct ReplyChannel<'a> {
    bus: &'a MessageBus,
    name: String,
}

impl Drop for ReplyChannel<'_> {
    fn drop(&mut self) {
        if let Some(crate::channel::Channel::PointToPoint(replies)) =
            self.bus.remove_now(&self.name)
        {
            replies.delete_now();
        }
    }
}

impl MessageBus {
    /// Sends `request` to `channel` and waits up to `timeout` for the correlated reply.
    pub async fn request(
        &self,
        channel: &str,
        mut request: Message,
        timeout: Duration,
    ) -> Result<Message, RequestError> {
        let id = request.id().to_string();
        let reply_name = format!("reply.{id}");
        let replies = self
            .builder::<PointToPoint>(&reply_name)
            .capacity(16)
            .build()
            .map_err(BusError::from)?;
        self.register(replies.clone())?;
        let _cleanup = ReplyChannel {
            bus: self,
            name: reply_name.clone(),
        };
        request
            .headers_mut()
            .insert(names::RETURN_ADDRESS, reply_name);
        self.send(channel, request).await?;
        let mut receiver = replies.receiver();
        let wait = async {
            while let Some(delivery) = receiver.recv().await {
                if delivery.message().correlation_id().ok().flatten() == Some(id.as_str()) {
                    let reply = delivery.message().clone();
                    delivery.ack();
                    return Some(reply);
                }
                delivery
                    .reject(format!("reply does not correlate with request {id}"))
                    .await;
            }
            None
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(Some(reply)) => Ok(reply),
            _ => Err(RequestError::Timeout {
                request: id,
                channel: channel.to_owned(),
                timeout,
            }),
        }
    }

    /// Sends `reply` to the return address of `request`, correlated with it.
    pub async fn reply(
        &self,
        request: &Message,
        mut reply: Message,
    ) -> Result<Outcome, RequestError> {
        let Some(address) = request.return_address()? else {
            return Err(RequestError::NoReturnAddress {
                request: request.id().to_string(),
            });
        };
        reply
            .headers_mut()
            .insert(names::CORRELATION_ID, request.id().to_string());
        Ok(self.send(address, reply).await?)
    }
}
