//! Where a route sends: its targets made recipient lists (fixed, or computed from templates per
//! message), and the dead letter channel what it can not deliver goes to.

use eip_core::MessageBus;
use eip_core::channel::{Channel, DeadLetterChannel};

use eip_core::router::{Recipient, RecipientList};
use eip_core::template::Syntax;

use crate::compile::{CompileError, bus_target};
use crate::plan::TargetRef;

/// A list of fixed targets, or, when one is a template, a list computed per message that looks
/// names up on the bus.
pub(super) fn recipients(
    route: &str,
    origin: &str,
    targets: &[TargetRef],
    bus: &MessageBus,
    dead_letters: &DeadLetterChannel,
) -> Result<RecipientList, CompileError> {
    let failed = |source| CompileError::Route {
        route: route.to_owned(),
        source,
    };
    let mut list = Vec::with_capacity(targets.len());
    for target in targets {
        list.push(match target {
            TargetRef::Template(text) => {
                let template = crate::template::parse(text, Syntax::new()).map_err(|e| {
                    CompileError::Template {
                        template: text.clone(),
                        reason: e.to_string(),
                    }
                })?;
                Recipient::Template(template)
            }
            fixed => Recipient::Fixed(bus_target(bus, fixed)?),
        });
    }
    if list.iter().any(|r| matches!(r, Recipient::Template(_))) {
        return RecipientList::computed(origin, list, bus.clone(), dead_letters.clone())
            .map_err(failed);
    }
    let fixed = list.into_iter().filter_map(|r| match r {
        Recipient::Fixed(target) => Some(target),
        Recipient::Template(_) => None,
    });
    Ok(RecipientList::new(origin, fixed)
        .map_err(failed)?
        .dead_letter_channel(dead_letters.clone()))
}

/// The dead letter channel messages from `channel` go to: its own, else the bus's.
pub(super) fn dead_letters_of(channel: &Channel, bus: &MessageBus) -> DeadLetterChannel {
    channel
        .dead_letter_channel()
        .unwrap_or_else(|| bus.dead_letter_channel())
        .clone()
}
