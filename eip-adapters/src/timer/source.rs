//! The timer's task: a tick, a message, its channel's room waited for, until its count is
//! sent or it is stopped.

use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use eip_core::channel::ChannelSender;
use eip_core::log::Escaped;
use eip_core::message::{Message, MessageId};
use tokio::sync::Notify;
use tokio::time::{Instant, MissedTickBehavior};
use tower::{Service, ServiceExt};

use super::template::{Fill, PayloadTemplate};
use super::{FIRED_AT, SEQUENCE, TIMER_NAME};

/// What a timer sends, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerConfig {
    /// Its name (the `timer-name` header, `{name}` in the template).
    pub name: String,
    /// The time between two messages (default 1 s); at least 1 ms.
    pub interval: Duration,
    /// The time before the first message (default none).
    pub delay: Duration,
    /// How many messages to send, then stop; `None` sends until stopped.
    pub count: Option<u64>,
    /// The payload.
    pub payload: PayloadTemplate,
    /// The subject (routing key) of every message.
    pub subject: Option<String>,
    /// The content type of every message (default `text/plain`).
    pub content_type: String,
}

impl TimerConfig {
    /// A timer named `name` sending `payload` every second, until stopped.
    pub fn new(name: impl Into<String>, payload: PayloadTemplate) -> Self {
        TimerConfig {
            name: name.into(),
            interval: Duration::from_secs(1),
            delay: Duration::ZERO,
            count: None,
            payload,
            subject: None,
            content_type: "text/plain".to_owned(),
        }
    }

    /// Message number `seq`, fired at `fired_at`.
    pub fn message(&self, seq: u64, fired_at: SystemTime) -> Message {
        let millis = fired_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        // The id is chosen first, so `{id}` in the payload is the message's own.
        let id = MessageId::new();
        let payload = self.payload.render(Fill {
            seq,
            timestamp: millis,
            id: &id.to_string(),
            name: &self.name,
        });
        let mut builder = Message::builder(payload)
            .id(id)
            .content_type(self.content_type.clone())
            .header(SEQUENCE, i64::try_from(seq).unwrap_or(i64::MAX))
            .header(FIRED_AT, i64::try_from(millis).unwrap_or(i64::MAX))
            .header(TIMER_NAME, self.name.clone());
        if let Some(subject) = &self.subject {
            builder = builder.subject(subject.clone());
        }
        builder.build()
    }
}

/// A timer feeding one channel.
#[derive(Debug)]
pub struct Timer {
    config: TimerConfig,
    sender: ChannelSender,
}

impl Timer {
    /// A timer sending into `sender`'s channel.
    pub fn new(config: TimerConfig, sender: ChannelSender) -> Self {
        Timer { config, sender }
    }

    /// Sends until its count is sent or `shutdown` completes (a message the channel is taking
    /// is taken first). Returns how many it sent.
    pub async fn run_until(mut self, shutdown: impl Future<Output = ()>) -> u64 {
        let mut shutdown = pin!(shutdown);
        let start = Instant::now() + self.config.delay;
        let mut ticks =
            tokio::time::interval_at(start, self.config.interval.max(Duration::from_millis(1)));
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut sent = 0;
        while self.config.count.is_none_or(|count| sent < count) {
            tokio::select! {
                biased;
                () = &mut shutdown => return sent,
                _ = ticks.tick() => {}
            }
            let ready = tokio::select! {
                biased;
                () = &mut shutdown => return sent,
                ready = self.sender.ready() => ready.map(|_| ()),
            };
            let message = self.config.message(sent + 1, SystemTime::now());
            if let Err(error) = match ready {
                Ok(()) => self.sender.call(message).await.map(drop),
                Err(e) => Err(e),
            } {
                tracing::warn!(timer = %self.config.name, error = %Escaped(&error), "timer: its channel refused a message, stopping");
                return sent;
            }
            sent += 1;
        }
        sent
    }

    /// Runs on the current tokio runtime; the handle stops it.
    pub fn spawn(self) -> TimerHandle {
        let stop = Arc::new(Notify::new());
        let signal = stop.clone();
        let task = tokio::spawn(self.run_until(async move { signal.notified().await }));
        TimerHandle { stop, task }
    }
}

/// Stops a spawned [`Timer`].
#[derive(Debug)]
pub struct TimerHandle {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<u64>,
}

impl TimerHandle {
    /// Stops it and waits; how many messages it sent.
    pub async fn shutdown(self) -> u64 {
        self.stop.notify_one();
        match self.task.await {
            Ok(sent) => sent,
            Err(e) => {
                tracing::error!(error = %Escaped(&e), "timer task failed");
                0
            }
        }
    }

    /// Whether it has stopped (its count sent, or its channel closed).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

#[cfg(test)]
mod tests {
    use eip_core::channel::{Channel, PointToPoint};

    use super::*;

    fn timer(channel: &PointToPoint, interval_ms: u64, count: Option<u64>) -> Timer {
        let payload = PayloadTemplate::parse("{seq}").expect("a template");
        let mut config = TimerConfig::new("t", payload);
        config.interval = Duration::from_millis(interval_ms);
        config.count = count;
        Timer::new(config, Channel::from(channel.clone()).sender())
    }

    #[tokio::test(start_paused = true)]
    async fn a_timer_sends_one_message_per_interval_the_first_at_once() {
        let channel = PointToPoint::new("ticks", 100).expect("a channel");
        let handle = timer(&channel, 1000, None).spawn();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(channel.stats().depth, 1, "the first at once");
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert_eq!(channel.stats().depth, 2, "one more after an interval");
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert_eq!(channel.stats().depth, 4);
        assert_eq!(handle.shutdown().await, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_timer_stops_by_itself_once_its_count_is_sent() {
        let channel = PointToPoint::new("ticks", 100).expect("a channel");
        let handle = timer(&channel, 10, Some(3)).spawn();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(handle.is_finished());
        assert_eq!(handle.shutdown().await, 3);
        let mut receiver = channel.receiver();
        for seq in 1..=3i64 {
            let delivery = receiver.try_recv().expect("a message");
            assert_eq!(
                delivery.message().payload_str(),
                Some(seq.to_string().as_str())
            );
            assert_eq!(
                delivery
                    .message()
                    .headers()
                    .get(SEQUENCE)
                    .and_then(|v| v.as_int()),
                Some(seq)
            );
            delivery.ack();
        }
        assert!(receiver.try_recv().is_err(), "nothing more");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_channel_makes_the_timer_wait_and_drops_no_message() {
        let channel = PointToPoint::new("ticks", 2).expect("a channel");
        let handle = timer(&channel, 10, Some(5)).spawn();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(channel.stats().depth, 2, "no more than the channel holds");
        assert!(!handle.is_finished(), "it waits for room");
        let mut receiver = channel.receiver();
        let mut seen = Vec::new();
        while seen.len() < 5 {
            let delivery = receiver.recv().await.expect("a message");
            seen.push(delivery.message().payload_str().map(str::to_owned));
            delivery.ack();
        }
        let expected: Vec<Option<String>> = (1..=5).map(|n| Some(n.to_string())).collect();
        assert_eq!(seen, expected, "every message, in order");
        assert_eq!(handle.shutdown().await, 5);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_stops_a_timer_waiting_for_room() {
        let channel = PointToPoint::new("ticks", 1).expect("a channel");
        let handle = timer(&channel, 10, None).spawn();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            handle.shutdown().await,
            1,
            "stopped while the channel was full"
        );
    }
}
