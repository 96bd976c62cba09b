//! Pulling from a durable consumer: one pull request at a time, its messages counted exactly.
//!
//! A JetStream pull consumer delivers only what was asked for: a pull request (to
//! `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`, answered on an inbox) asks for up to
//! `batch` messages and waits at most `expires` for them, while the server sends an idle
//! heartbeat (status 100) every `idle_heartbeat` it has nothing to send. A request ends once its
//! `batch` messages came, or with a status: 408 when it expired, 409 when the server ended it
//! (a leadership change, a server shutting down, or a request the consumer refuses).
//!
//! [`Puller`] keeps exactly one request outstanding whenever it is asked for a message: it
//! counts the messages that request still may bring, and asks again the moment the request has
//! brought them all or ended with a status. It never believes a request outstanding that the
//! server has finished with, so a consumer with a window of one (`max_ack_pending` 1) never
//! waits for a message that was not asked for. (The client library's continuous stream adds a
//! request's size to its count only when its background task reports the request sent; a
//! message that arrives before that report is counted against the request twice, and with a
//! batch of one the stream then sends no request until it misses two heartbeats.) Asking once
//! too often is harmless, the server delivers no more than `max_ack_pending` allows, so a
//! request interrupted midway is simply asked again.
//!
//! Silence is a lost connection: when neither a message nor a heartbeat came for two heartbeat
//! intervals of waiting, [`Puller::next`] fails and the bridge reconnects. Waiting is counted
//! from the first call that found nothing to read, so a bridge that stopped reading for a
//! while (a full channel) is not taken for a dead server.

use std::time::Duration;

use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::consumer::pull::BatchConfig;
use async_nats::jetstream::{self, Context};
use async_nats::{StatusCode, Subject, Subscriber};
use futures::StreamExt;
use tokio::time::Instant;

/// One durable consumer read with one pull request at a time; see the [module](self).
pub(crate) struct Puller {
    consumer: PullConsumer,
    context: Context,
    inbox: Subject,
    subscriber: Subscriber,
    request: BatchConfig,
    /// What the outstanding request may still bring (`None`: no request outstanding).
    outstanding: Option<Outstanding>,
    /// Since when `next` has been waiting with nothing read (kept across a cancelled call).
    waiting_since: Option<Instant>,
}

/// What the request outstanding may still bring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outstanding(usize);

/// What one item read from the inbox means for the request outstanding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A message of the stream, to hand over; the request may bring more.
    Message(Option<Outstanding>),
    /// The server is there, the request still waits: keep reading.
    Alive,
    /// The request is over without a message: ask again.
    Ended,
    /// The consumer can not be read this way: reconnect (and say why).
    Failed(String),
}

/// What `item` (a message or a status on the inbox) means for a request that may still bring
/// `outstanding` messages. Pure, so that the accounting is tested without a server.
pub(crate) fn account(
    outstanding: Option<Outstanding>,
    status: Option<StatusCode>,
    description: Option<&str>,
) -> Step {
    match status {
        None | Some(StatusCode::OK) => Step::Message(
            outstanding
                .map(|Outstanding(left)| left.saturating_sub(1))
                .filter(|left| *left > 0)
                .map(Outstanding),
        ),
        Some(StatusCode::IDLE_HEARTBEAT) => Step::Alive,
        // Expired (408), or nothing to deliver right now (404, for a request that does not
        // wait): the request is over.
        Some(StatusCode::TIMEOUT | StatusCode::NOT_FOUND) => Step::Ended,
        Some(StatusCode::REQUEST_TERMINATED) => {
            let description = description.unwrap_or("");
            // The consumer gone, or a request it refuses, fails the same way when asked again:
            // a reconnection declares the consumer again and says why in the log.
            if description.eq_ignore_ascii_case("consumer deleted")
                || description.eq_ignore_ascii_case("consumer is push based")
                || description.starts_with("Exceeded Max")
            {
                Step::Failed(format!("the server ended the pull request: {description}"))
            } else {
                // A leadership change, a server shutting down, a message larger than asked:
                // this request is over, the next one is answered.
                Step::Ended
            }
        }
        Some(StatusCode::NO_RESPONDERS) => {
            Step::Failed("JetStream does not answer pull requests (no responders)".to_owned())
        }
        Some(other) => Step::Failed(format!(
            "unexpected status {other} on a pull request: {}",
            description.unwrap_or("(no description)")
        )),
    }
}

impl Puller {
    /// Reads `consumer` on a new inbox of `context`'s client, asking for up to `batch` messages
    /// at a time (the bridge's window), with a heartbeat every `heartbeat`.
    pub(crate) async fn open(
        context: &Context,
        consumer: PullConsumer,
        batch: usize,
        heartbeat: Duration,
    ) -> Result<Self, String> {
        let client = context.client();
        let inbox = Subject::from(client.new_inbox());
        let subscriber = client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| format!("subscribing to the pull inbox: {e}"))?;
        Ok(Puller {
            consumer,
            context: context.clone(),
            inbox,
            subscriber,
            request: BatchConfig {
                batch: batch.max(1),
                expires: Some(heartbeat.saturating_mul(6)),
                idle_heartbeat: heartbeat,
                ..Default::default()
            },
            outstanding: None,
            waiting_since: None,
        })
    }

    /// The next message of the consumer, asking for more whenever no request is outstanding.
    /// An error means the consumer can not be read on this connection any more.
    ///
    /// Cancel safe: a call dropped midway loses no message (what was read is in the inbox
    /// still) and at worst leaves one request more outstanding than counted.
    pub(crate) async fn next(&mut self) -> Result<jetstream::Message, String> {
        loop {
            if self.outstanding.is_none() {
                self.consumer
                    .request_batch(self.request.clone(), self.inbox.clone())
                    .await
                    .map_err(|e| format!("sending a pull request: {e}"))?;
                // Counted only once sent: a call cancelled before asks again (once too often,
                // never once too few).
                self.outstanding = Some(Outstanding(self.request.batch));
            }
            let since = *self.waiting_since.get_or_insert_with(Instant::now);
            let silence = self.request.idle_heartbeat.saturating_mul(2);
            let item = tokio::time::timeout_at(since + silence, self.subscriber.next())
                .await
                .map_err(|_| format!("no message and no heartbeat for {silence:?}"))?
                .ok_or_else(|| "the pull inbox was closed".to_owned())?;
            self.waiting_since = None;
            match account(self.outstanding, item.status, item.description.as_deref()) {
                Step::Message(left) => {
                    self.outstanding = left;
                    return Ok(jetstream::Message {
                        message: item,
                        context: self.context.clone(),
                    });
                }
                Step::Alive => {}
                Step::Ended => self.outstanding = None,
                Step::Failed(reason) => return Err(reason),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> Option<StatusCode> {
        Some(StatusCode::from_u16(code).unwrap())
    }

    #[test]
    fn a_request_is_over_once_its_last_message_came() {
        assert_eq!(
            account(Some(Outstanding(1)), None, None),
            Step::Message(None),
            "a window of one asks again after each message"
        );
        assert_eq!(
            account(Some(Outstanding(3)), None, None),
            Step::Message(Some(Outstanding(2)))
        );
        assert_eq!(
            account(Some(Outstanding(2)), status(200), None),
            Step::Message(Some(Outstanding(1)))
        );
    }

    #[test]
    fn a_message_beyond_what_was_counted_still_leaves_no_request_believed_outstanding() {
        // A message of a request asked once too often (after a cancelled call).
        assert_eq!(account(None, None, None), Step::Message(None));
    }

    #[test]
    fn a_heartbeat_keeps_the_request_and_an_expiry_ends_it() {
        assert_eq!(
            account(Some(Outstanding(4)), status(100), None),
            Step::Alive
        );
        assert_eq!(
            account(Some(Outstanding(4)), status(408), Some("Request Timeout")),
            Step::Ended
        );
        assert_eq!(
            account(Some(Outstanding(4)), status(404), Some("No Messages")),
            Step::Ended
        );
    }

    #[test]
    fn a_request_the_server_ended_is_asked_again_unless_the_consumer_refuses_it() {
        for passing in [
            "Leadership Change",
            "Server Shutdown",
            "Message Size Exceeds MaxBytes",
        ] {
            assert_eq!(
                account(Some(Outstanding(1)), status(409), Some(passing)),
                Step::Ended,
                "{passing}"
            );
        }
        for refusal in [
            "Consumer Deleted",
            "Consumer is push based",
            "Exceeded MaxRequestBatch of 10",
            "Exceeded MaxWaiting",
        ] {
            match account(Some(Outstanding(1)), status(409), Some(refusal)) {
                Step::Failed(reason) => assert!(reason.contains(refusal), "{reason}"),
                other => panic!("{refusal}: {other:?}"),
            }
        }
    }

    #[test]
    fn no_responders_and_unknown_statuses_are_failures_that_say_what_came() {
        assert!(matches!(account(None, status(503), None), Step::Failed(_)));
        match account(Some(Outstanding(1)), status(400), Some("Bad Request")) {
            Step::Failed(reason) => assert!(reason.contains("Bad Request"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}
