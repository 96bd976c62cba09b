//! Load Balancer: each message to one of several targets (channels or exchanges), picked by a
//! [`Strategy`]: in turn ([`RoundRobin`](Strategy::RoundRobin)) or the first that works
//! ([`Failover`](Strategy::Failover)).
//!
//! Unlike a [`RecipientList`](super::RecipientList), which sends a copy to every target, a load
//! balancer sends each message once. A target is passed over while it is closed (a deleted
//! channel never opens again): round robin gives the turn to the next open target, failover
//! moves on to the next in order. A full channel is not passed over: the send waits for room,
//! as every send in eip does, so a slow target slows its share of the messages instead of
//! pushing them onto the others. An exchange is never passed over once it was sent to, since
//! its bindings may have delivered the message to some of their channels already.
//!
//! [`select`](LoadBalancer::select) is the decision, the target a message goes to: for round
//! robin it takes the turn (the next call picks the next target), and nothing else changes.
//! [`send`](LoadBalancer::send) carries it out, and when the picked channel turns out to be
//! closed by the time the message gets there, tries the next one. With every target closed
//! the message is handed back in the error, so nothing is lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use super::BoxFuture;
use super::error::RouteError;
use super::target::{Sent, Target};
use crate::message::Message;

/// How a [`LoadBalancer`] picks a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Each message to the next target in turn, passing over closed ones: n open targets
    /// take one message in n each, in the order given.
    RoundRobin,
    /// Every message to the first target in order that is open: the others stand by.
    Failover,
}

impl Strategy {
    /// Its name in a flow file: `round-robin`, `failover`.
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::RoundRobin => "round-robin",
            Strategy::Failover => "failover",
        }
    }
}

/// Sends each message to one of its targets.
///
/// ```
/// use eip_core::channel::PointToPoint;
/// use eip_core::router::{LoadBalancer, Pick, Strategy};
///
/// let a = PointToPoint::new("a", 10).unwrap();
/// let b = PointToPoint::new("b", 10).unwrap();
/// let lb = LoadBalancer::new("work", [a.clone().into(), b.into()], Strategy::RoundRobin).unwrap();
/// let picked: Vec<usize> = (0..4).filter_map(|_| lb.select().index()).collect();
/// assert_eq!(picked, [0, 1, 0, 1]);
///
/// let failover = LoadBalancer::new("work", [a.clone().into()], Strategy::Failover).unwrap();
/// assert!(matches!(failover.select(), Pick::Target { index: 0, .. }));
/// ```
#[derive(Clone)]
pub struct LoadBalancer {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    targets: Vec<Target>,
    strategy: Strategy,
    /// The round robin's next turn (taken modulo the number of targets).
    turn: AtomicUsize,
    picked: Vec<AtomicU64>,
}

/// A load balancer without a target: every message would be lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("load balancer `{name}` has no target")]
pub struct NoTargets {
    /// The load balancer's name.
    pub name: String,
}

/// The target a [`LoadBalancer`] picked for a message.
#[derive(Debug, Clone, Copy)]
pub enum Pick<'a> {
    /// The target at `index` (in the order given).
    Target {
        /// Its position.
        index: usize,
        /// The channel or exchange.
        target: &'a Target,
    },
    /// Every target is a closed channel: the message has nowhere to go.
    AllClosed,
}

impl<'a> Pick<'a> {
    /// The target picked, if any.
    pub fn target(&self) -> Option<&'a Target> {
        match *self {
            Pick::Target { target, .. } => Some(target),
            Pick::AllClosed => None,
        }
    }

    /// The position of the target picked, if any.
    pub fn index(&self) -> Option<usize> {
        match *self {
            Pick::Target { index, .. } => Some(index),
            Pick::AllClosed => None,
        }
    }
}

/// A load balancer's counters since it was built (shared by its clones).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadBalancerStats {
    /// Messages each target was picked for, in the targets' order.
    pub picked: Vec<u64>,
}

fn is_closed(target: &Target) -> bool {
    target.as_channel().is_some_and(|c| c.is_closed())
}

impl LoadBalancer {
    /// A load balancer named `name` (for errors) over `targets`, in order; refused without a
    /// target.
    pub fn new(
        name: &str,
        targets: impl IntoIterator<Item = Target>,
        strategy: Strategy,
    ) -> Result<LoadBalancer, NoTargets> {
        let targets: Vec<Target> = targets.into_iter().collect();
        if targets.is_empty() {
            return Err(NoTargets {
                name: name.to_owned(),
            });
        }
        Ok(LoadBalancer {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                picked: targets.iter().map(|_| AtomicU64::new(0)).collect(),
                targets,
                strategy,
                turn: AtomicUsize::new(0),
            }),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The targets, in order.
    pub fn targets(&self) -> &[Target] {
        &self.inner.targets
    }

    /// How it picks.
    pub fn strategy(&self) -> Strategy {
        self.inner.strategy
    }

    /// The target the next message goes to. Round robin takes the turn; otherwise nothing
    /// changes but the counters.
    pub fn select(&self) -> Pick<'_> {
        let inner = &*self.inner;
        let n = inner.targets.len();
        match inner.strategy {
            Strategy::Failover => self.first_open(0, n),
            // A closed target's turn is skipped, not handed to its neighbour: the open
            // targets stay even.
            Strategy::RoundRobin => (0..n)
                .map(|_| self.first_open(inner.turn.fetch_add(1, Ordering::Relaxed) % n, 1))
                .find(|pick| pick.target().is_some())
                .unwrap_or(Pick::AllClosed),
        }
    }

    /// The first open target from `first` on (wrapping), looking at `count` of them.
    fn first_open(&self, first: usize, count: usize) -> Pick<'_> {
        let inner = &*self.inner;
        let n = inner.targets.len();
        for step in 0..count {
            let index = (first + step) % n;
            let Some(target) = inner.targets.get(index) else {
                continue;
            };
            if !is_closed(target) {
                if let Some(count) = inner.picked.get(index) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                return Pick::Target { index, target };
            }
        }
        Pick::AllClosed
    }

    /// Sends `msg` to the target [`select`](Self::select) picks (waiting for room), and to the
    /// next open one when that channel is closed by the time the message gets there. Returns
    /// the target's position and what it did; with every target closed, the message comes
    /// back in the error.
    pub async fn send(&self, msg: Message) -> Result<(usize, Sent), RouteError> {
        let n = self.inner.targets.len();
        let mut pick = self.select();
        let mut msg = msg;
        let mut tried = 0;
        loop {
            let Pick::Target { index, target } = pick else {
                return Err(self.all_closed(msg));
            };
            match target.send(msg).await {
                Ok(sent) => return Ok((index, sent)),
                Err(RouteError::Send(e)) if tried + 1 < n => {
                    msg = e.into_message();
                    tried += 1;
                    pick = self.first_open(index + 1, n - 1);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The error of a message no target could take: closed, like the last target.
    fn all_closed(&self, msg: Message) -> RouteError {
        let channel = self
            .inner
            .targets
            .last()
            .map_or_else(|| self.inner.name.clone(), |t| t.name().to_owned());
        RouteError::Send(crate::channel::SendError::Closed {
            channel,
            message: Box::new(msg),
        })
    }

    /// The counters since it was built.
    pub fn stats(&self) -> LoadBalancerStats {
        LoadBalancerStats {
            picked: self
                .inner
                .picked
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

impl std::fmt::Debug for LoadBalancer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.inner.targets.iter().map(Target::name).collect();
        f.debug_struct("LoadBalancer")
            .field("name", &self.inner.name)
            .field("targets", &names)
            .field("strategy", &self.inner.strategy)
            .finish()
    }
}

/// Always ready: backpressure comes from the picked channel, inside the call's future.
impl tower::Service<Message> for LoadBalancer {
    type Response = (usize, Sent);
    type Error = RouteError;
    type Future = BoxFuture<Result<(usize, Sent), RouteError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RouteError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let lb = self.clone();
        Box::pin(async move { lb.send(msg).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::PointToPoint;

    fn queues(n: usize) -> Vec<PointToPoint> {
        (0..n)
            .map(|i| PointToPoint::new(&format!("q{i}"), 100).unwrap())
            .collect()
    }

    fn over(queues: &[PointToPoint], strategy: Strategy) -> LoadBalancer {
        let targets = queues.iter().map(|q| Target::from(q.clone()));
        LoadBalancer::new("lb", targets, strategy).unwrap()
    }

    #[test]
    fn round_robin_gives_each_open_target_its_turn() {
        let qs = queues(3);
        let lb = over(&qs, Strategy::RoundRobin);
        let picked: Vec<usize> = (0..7).filter_map(|_| lb.select().index()).collect();
        assert_eq!(picked, [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(lb.stats().picked, [3, 2, 2]);
    }

    #[tokio::test]
    async fn closed_targets_are_passed_over_and_all_closed_hands_the_message_back() {
        let qs = queues(3);
        let rr = over(&qs, Strategy::RoundRobin);
        let failover = over(&qs, Strategy::Failover);
        assert_eq!(failover.send(Message::new("a")).await.unwrap().0, 0);
        qs[0].delete().await;
        assert_eq!(failover.send(Message::new("b")).await.unwrap().0, 1);
        let picked: Vec<usize> = (0..4).filter_map(|_| rr.select().index()).collect();
        assert_eq!(
            picked,
            [1, 2, 1, 2],
            "the open targets share the turns evenly"
        );
        qs[1].delete().await;
        qs[2].delete().await;
        assert!(matches!(failover.select(), Pick::AllClosed));
        let err = failover.send(Message::new("c")).await.unwrap_err();
        assert_eq!(err.into_message().payload_str(), Some("c"));
    }

    #[test]
    fn no_target_is_refused() {
        let err = LoadBalancer::new("lb", Vec::new(), Strategy::Failover).unwrap_err();
        assert_eq!(err.to_string(), "load balancer `lb` has no target");
    }
}
