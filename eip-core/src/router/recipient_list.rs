//! Recipient List: a copy of the message to each channel (or exchange) of a list.
//!
//! The list is fixed ([`RecipientList::new`]) or read from each message
//! ([`RecipientList::from_header_with`]): a string header holding comma-separated names of
//! channels or exchanges, looked up by a [`TargetResolver`]. [`RecipientList::from_header`]
//! looks them up in a [`MessageBus`](crate::MessageBus); it is defined beside the bus, so that
//! routing does not depend on the bus. Names are trimmed, empty entries skipped,
//! and a recipient listed twice gets one copy. Copies share payload and headers (no bytes copied) and are sent
//! one after the other, each waiting for room, so a full recipient holds up the rest
//! (backpressure, not loss).
//!
//! Nothing is dropped silently. A name the resolver does not know dead-letters a copy with reason
//! `no-route`, the error (with its "did you mean" suggestion) as the error text and the unknown
//! name as the death record's channel: create that channel, replay the dead letter, and it goes
//! there and nowhere else. A message whose header is missing, not a string or lists no name is
//! dead-lettered with reason `no-route`, the list's name as its channel. A recipient that is
//! closed (deleted) gets its copy dead-lettered with reason `channel-deleted`; without a dead
//! letter channel (possible for a fixed list only) the call fails instead, after the other
//! recipients got their copies.

use std::sync::Arc;
use std::task::{Context, Poll};

use super::BoxFuture;
use super::error::{RouteError, RouterError};
use super::target::{Target, TargetResolver};
use crate::channel::{DeadLetterChannel, SendError};
use crate::message::{DeathReason, Demand, HeaderValue, Message, Reading};
use crate::template::Template;

/// Sends a copy of each message to every channel or exchange of a list.
///
/// ```
/// use eip_core::{Message, MessageBus};
/// use eip_core::router::RecipientList;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let bus = MessageBus::new();
/// let billing = bus.create_point_to_point("billing").unwrap();
/// let shipping = bus.create_point_to_point("shipping").unwrap();
/// let list = RecipientList::from_header("orders", "recipients", &bus);
/// let msg = Message::builder("order 7").header("recipients", "billing, shipping, shiping").build();
/// let done = list.distribute(msg).await.unwrap();
/// assert_eq!((done.sent, done.dead_lettered), (2, 1));
/// assert_eq!(billing.stats().accepted + shipping.stats().accepted, 2);
/// let mut dead = bus.dead_letter_channel().receiver();
/// let death = dead.recv().await.unwrap().message().death().unwrap().unwrap();
/// assert_eq!(death.channel, "shiping");
/// assert!(death.error.unwrap().contains("did you mean `shipping`?"));
/// # }
/// ```
#[derive(Clone)]
pub struct RecipientList {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    name: String,
    source: Source,
    dead_letters: Option<DeadLetterChannel>,
}

#[derive(Clone)]
enum Source {
    Fixed(Vec<Target>),
    Header {
        header: String,
        resolver: Arc<dyn TargetResolver>,
    },
    Computed {
        recipients: Vec<Recipient>,
        /// What the templates together read of a payload: each message is read once for all.
        demand: Demand,
        resolver: Arc<dyn TargetResolver>,
    },
}

/// A recipient of a list whose names may be made from each message: a channel or exchange,
/// or a [`Template`] whose text, filled in per message, names one.
#[derive(Debug, Clone)]
pub enum Recipient {
    /// Always this target.
    Fixed(Target),
    /// The target the message's rendering of the template names.
    Template(Template),
}

/// Where a message would go: the recipients resolved, and what could not be.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    /// The channels and exchanges a copy goes to, in list order, each once.
    pub targets: Vec<Target>,
    /// Names the resolver does not know, with the error (dead-lettered, reason `no-route`).
    pub unknown: Vec<(String, String)>,
    /// Why the message names no recipient at all (it is dead-lettered, reason `no-route`).
    pub no_recipients: Option<String>,
    /// Templates the message could not fill in because a computed placeholder (jq) failed on
    /// its content, with the error: for each, a copy is dead-lettered with reason `invalid`.
    pub invalid: Vec<(String, String)>,
}

/// What a recipient list did with a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Distribution {
    /// Copies recipients accepted.
    pub sent: usize,
    /// Copies (or the message itself) put on the dead letter channel.
    pub dead_lettered: usize,
}

impl RecipientList {
    /// A list of fixed recipients, channels or exchanges (each once). `name` is the death
    /// record's channel for messages that can not be delivered; no dead letter channel until
    /// one is given with [`dead_letter_channel`](Self::dead_letter_channel).
    pub fn new<T: Into<Target>>(
        name: &str,
        recipients: impl IntoIterator<Item = T>,
    ) -> Result<Self, RouterError> {
        let mut targets: Vec<Target> = Vec::new();
        for target in recipients.into_iter().map(Into::into) {
            if !targets.iter().any(|t| t.name() == target.name()) {
                targets.push(target);
            }
        }
        if targets.is_empty() {
            return Err(RouterError::NoRecipients {
                name: name.to_owned(),
            });
        }
        Ok(RecipientList::with_source(
            name,
            Source::Fixed(targets),
            None,
        ))
    }

    /// A list read from each message's `header` (comma-separated names of channels or
    /// exchanges), looked up by `resolver`, dead-lettering to `dead_letters`. With a bus,
    /// [`from_header`](Self::from_header) fills both in.
    ///
    /// ```
    /// use eip_core::Message;
    /// use eip_core::channel::{DeadLetterChannel, PointToPoint};
    /// use eip_core::router::{RecipientList, Target};
    ///
    /// let billing = PointToPoint::new("billing", 10).unwrap();
    /// let dead = DeadLetterChannel::new("dead", 10).unwrap();
    /// let names = move |name: &str| match name {
    ///     "billing" => Ok(Target::from(billing.clone())),
    ///     other => Err(format!("no channel `{other}`")),
    /// };
    /// let list = RecipientList::from_header_with("orders", "to", names, dead);
    /// let r = list.resolve(&Message::builder("m").header("to", "billing, audit").build());
    /// assert_eq!(r.targets[0].name(), "billing");
    /// assert_eq!(r.unknown, [("audit".to_owned(), "no channel `audit`".to_owned())]);
    /// ```
    pub fn from_header_with(
        name: &str,
        header: &str,
        resolver: impl TargetResolver,
        dead_letters: DeadLetterChannel,
    ) -> Self {
        let source = Source::Header {
            header: header.to_owned(),
            resolver: Arc::new(resolver),
        };
        RecipientList::with_source(name, source, Some(dead_letters))
    }

    /// A list whose recipients may be [templates](crate::template): each message fills them
    /// in, and `resolver` looks up the names they make. A template the message can not fill
    /// in, or whose name is unknown, dead-letters a copy to `dead_letters` with reason
    /// `no-route` and the reason, unless a computed placeholder (jq) failed on it: then the
    /// message is at fault and its copy is dead-lettered with reason `invalid`. A computed
    /// destination never drops a message silently.
    ///
    /// ```
    /// use eip_core::Message;
    /// use eip_core::channel::{DeadLetterChannel, PointToPoint};
    /// use eip_core::router::{Recipient, RecipientList, Target};
    /// use eip_core::template::Template;
    ///
    /// let eu = PointToPoint::new("orders.eu", 10).unwrap();
    /// let names = move |name: &str| match name {
    ///     "orders.eu" => Ok(Target::from(eu.clone())),
    ///     other => Err(format!("no channel `{other}`")),
    /// };
    /// let by_region = Recipient::Template(Template::parse("orders.{$.region}").unwrap());
    /// let dead = DeadLetterChannel::new("dead", 10).unwrap();
    /// let list = RecipientList::computed("orders", [by_region], names, dead).unwrap();
    /// let r = list.resolve(&Message::new(r#"{"region": "eu"}"#));
    /// assert_eq!(r.targets[0].name(), "orders.eu");
    /// let r = list.resolve(&Message::new(r#"{"region": "us"}"#));
    /// assert_eq!(
    ///     r.unknown,
    ///     [("orders.us".to_owned(), "`orders.{$.region}` made `orders.us`: no channel `orders.us`".to_owned())]
    /// );
    /// ```
    pub fn computed(
        name: &str,
        recipients: impl IntoIterator<Item = Recipient>,
        resolver: impl TargetResolver,
        dead_letters: DeadLetterChannel,
    ) -> Result<Self, RouterError> {
        let recipients: Vec<Recipient> = recipients.into_iter().collect();
        if recipients.is_empty() {
            return Err(RouterError::NoRecipients {
                name: name.to_owned(),
            });
        }
        let demand =
            recipients
                .iter()
                .fold(Demand::nothing(), |demand, recipient| match recipient {
                    Recipient::Fixed(_) => demand,
                    Recipient::Template(template) => demand.union(template.demand()),
                });
        let source = Source::Computed {
            recipients,
            demand,
            resolver: Arc::new(resolver),
        };
        Ok(RecipientList::with_source(name, source, Some(dead_letters)))
    }

    fn with_source(name: &str, source: Source, dead_letters: Option<DeadLetterChannel>) -> Self {
        RecipientList {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                source,
                dead_letters,
            }),
        }
    }

    /// Uses `channel` as the dead letter channel.
    pub fn dead_letter_channel(self, channel: DeadLetterChannel) -> Self {
        let inner = Arc::unwrap_or_clone(self.inner);
        RecipientList {
            inner: Arc::new(Inner {
                dead_letters: Some(channel),
                ..inner
            }),
        }
    }

    /// The list's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Where `msg` would go. Pure: sends nothing.
    pub fn resolve(&self, msg: &Message) -> Resolution {
        let (header, resolver) = match &self.inner.source {
            Source::Fixed(targets) => {
                return Resolution {
                    targets: targets.clone(),
                    ..Resolution::default()
                };
            }
            Source::Header { header, resolver } => (header, resolver),
            Source::Computed {
                recipients,
                demand,
                resolver,
            } => {
                let reading = Reading::new(msg, demand);
                return computed(&reading, recipients, resolver.as_ref());
            }
        };
        let list = match msg.headers().get(header) {
            Some(HeaderValue::Str(list)) => list,
            Some(other) => {
                return Resolution {
                    no_recipients: Some(format!(
                        "recipient header `{header}` is {}, not a comma-separated string",
                        other.type_name()
                    )),
                    ..Resolution::default()
                };
            }
            None => {
                return Resolution {
                    no_recipients: Some(format!("recipient header `{header}` is missing")),
                    ..Resolution::default()
                };
            }
        };
        let mut resolution = Resolution::default();
        let mut seen: Vec<&str> = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            match resolver.resolve(name) {
                Ok(target) => resolution.targets.push(target),
                Err(error) => resolution.unknown.push((name.to_owned(), error)),
            }
        }
        if seen.is_empty() {
            resolution.no_recipients =
                Some(format!("recipient header `{header}` lists no channel"));
        }
        resolution
    }

    /// Sends a copy to every recipient (waiting for room at each) and dead-letters what has
    /// nowhere to go. Completes when every copy has been accepted somewhere.
    pub async fn distribute(&self, msg: Message) -> Result<Distribution, RouteError> {
        let mut done = Distribution::default();
        if let Source::Fixed(targets) = &self.inner.source {
            self.send_all(&msg, targets, &mut done).await?;
            return Ok(done);
        }
        let resolution = self.resolve(&msg);
        if let Some(reason) = resolution.no_recipients {
            self.bury(msg, &self.inner.name, DeathReason::NoRoute, reason)
                .await?;
            done.dead_lettered += 1;
            return Ok(done);
        }
        for (name, error) in resolution.unknown {
            self.bury(msg.clone(), &name, DeathReason::NoRoute, error)
                .await?;
            done.dead_lettered += 1;
        }
        for (template, error) in resolution.invalid {
            self.bury(msg.clone(), &template, DeathReason::Invalid, error)
                .await?;
            done.dead_lettered += 1;
        }
        self.send_all(&msg, &resolution.targets, &mut done).await?;
        Ok(done)
    }

    /// A copy to each target; a closed channel dead-letters its copy (an exchange, the copies
    /// its closed channels refused), or, without a dead letter channel, fails the call once the
    /// others have theirs.
    async fn send_all(
        &self,
        msg: &Message,
        targets: &[Target],
        done: &mut Distribution,
    ) -> Result<(), RouteError> {
        let mut failed: Option<RouteError> = None;
        for target in targets {
            match target.send(msg.clone()).await {
                Ok(_) => done.sent += 1,
                Err(error) if self.inner.dead_letters.is_some() => {
                    let reason = error.to_string();
                    let copy = error.into_message();
                    self.bury(copy, target.name(), DeathReason::ChannelDeleted, reason)
                        .await?;
                    done.dead_lettered += 1;
                }
                Err(error) => {
                    failed.get_or_insert(error);
                }
            }
        }
        match failed {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    async fn bury(
        &self,
        msg: Message,
        origin: &str,
        reason: DeathReason,
        error: String,
    ) -> Result<(), RouteError> {
        let Some(dead_letters) = &self.inner.dead_letters else {
            return Err(RouteError::Send(SendError::Closed {
                channel: origin.to_owned(),
                message: Box::new(msg),
            }));
        };
        dead_letters
            .bury(msg, origin, reason, Some(error))
            .await
            .map_err(|message| RouteError::DeadLetterClosed {
                channel: dead_letters.name().to_owned(),
                message: Box::new(message),
            })
    }
}

impl std::fmt::Debug for RecipientList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("RecipientList");
        s.field("name", &self.inner.name);
        match &self.inner.source {
            Source::Fixed(targets) => {
                let names: Vec<&str> = targets.iter().map(Target::name).collect();
                s.field("recipients", &names)
            }
            Source::Header { header, .. } => s.field("header", header),
            Source::Computed { recipients, .. } => s.field("recipients", recipients),
        };
        s.field(
            "dead_letters",
            &self.inner.dead_letters.as_ref().map(|d| d.name()),
        )
        .finish()
    }
}

/// Always ready: backpressure comes from the recipients, inside the call's future.
impl tower::Service<Message> for RecipientList {
    type Response = Distribution;
    type Error = RouteError;
    type Future = BoxFuture<Result<Distribution, RouteError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RouteError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let list = self.clone();
        Box::pin(async move { list.distribute(msg).await })
    }
}

/// Where `msg` goes by a list of fixed and computed recipients: each target once, in list
/// order; what a template could not make, or made a name `resolver` does not know, with why.
fn computed(
    reading: &Reading<'_>,
    recipients: &[Recipient],
    resolver: &dyn TargetResolver,
) -> Resolution {
    let mut resolution = Resolution::default();
    let add = |resolution: &mut Resolution, target: Target| {
        if !resolution.targets.iter().any(|t| t.name() == target.name()) {
            resolution.targets.push(target);
        }
    };
    for recipient in recipients {
        match recipient {
            Recipient::Fixed(target) => add(&mut resolution, target.clone()),
            Recipient::Template(template) => match template.render_in(reading) {
                Ok(name) => match resolver.resolve(&name) {
                    Ok(target) => add(&mut resolution, target),
                    Err(error) => resolution
                        .unknown
                        .push((name.clone(), format!("`{template}` made `{name}`: {error}"))),
                },
                Err(error) if error.is_invalid_message() => resolution
                    .invalid
                    .push((template.to_string(), format!("`{template}`: {error}"))),
                Err(error) => resolution
                    .unknown
                    .push((template.to_string(), format!("`{template}`: {error}"))),
            },
        }
    }
    resolution
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::channel::{PointToPoint, PublishSubscribe};

    #[test]
    fn header_lists_are_trimmed_deduplicated_and_resolved_in_order() {
        let b = PointToPoint::new("b", 1).unwrap();
        let ax = PublishSubscribe::new("a.x", 1).unwrap();
        let names = move |name: &str| match name {
            "b" => Ok(Target::from(b.clone())),
            "a.x" => Ok(Target::from(ax.clone())),
            other => Err(format!("unknown `{other}`")),
        };
        let dead = DeadLetterChannel::new("dead", 1).unwrap();
        let list = RecipientList::from_header_with("in", "to", names, dead);
        let msg = Message::builder("m")
            .header("to", " b,,a.x , b, nope ,")
            .build();
        let r = list.resolve(&msg);
        let names: Vec<&str> = r.targets.iter().map(Target::name).collect();
        assert_eq!(names, ["b", "a.x"]);
        assert_eq!(
            r.unknown,
            [("nope".to_owned(), "unknown `nope`".to_owned())]
        );
        assert!(r.no_recipients.is_none());
        let none = list.resolve(&Message::builder("m").header("to", " , ").build());
        assert!(none.no_recipients.is_some() && none.targets.is_empty());
    }

    #[test]
    fn a_fixed_list_names_each_channel_once() {
        let a = PointToPoint::new("a", 1).unwrap();
        let list = RecipientList::new("in", [a.clone(), a]).unwrap();
        assert_eq!(list.resolve(&Message::new("m")).targets.len(), 1);
        assert_eq!(
            format!("{list:?}"),
            r#"RecipientList { name: "in", recipients: ["a"], dead_letters: None }"#
        );
    }
}
