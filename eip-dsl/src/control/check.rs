//! Checking a runtime change as a flow file's would be checked: the change is put into a flow
//! holding the running flow's channels (name and kind) and exchanges (name), and that flow is
//! validated. The problems are the flow file's, word for word; each is given with its help.

use eip_core::channel::ChannelKind;

use super::{BindingChange, ControlError, JoinChange};
use crate::compile::FlowView;
use crate::diagnostic::Problem;
use crate::plan::{BindingPlan, JoinPlan};
use crate::spec::{
    BindingSpec, ChannelSpec, ExchangeSpec, FlowSpec, JoinSpec, KindSpec, Located, Number,
};

/// `join` checked against `flow`'s channels.
pub(super) fn join(flow: &FlowView, join: &JoinChange) -> Result<JoinPlan, ControlError> {
    let mut spec = names_of(flow);
    spec.joins.push(JoinSpec {
        at: None,
        from: Located::new(join.from.clone()),
        to: Located::new(join.to.clone()),
        filter: join.filter.clone().map(Located::new),
        hops: join.hops.map(|h| Located::new(Number::Integer(h))),
        archival: join.archival.then(|| Located::new(true)),
    });
    let mut plan = validated(&spec)?;
    plan.joins
        .pop()
        .ok_or_else(|| ControlError::Refused(vec!["the join was not made".to_owned()]))
}

/// `binding` checked against `flow`'s exchanges and channels.
pub(super) fn binding(
    flow: &FlowView,
    binding: &BindingChange,
) -> Result<BindingPlan, ControlError> {
    let mut spec = names_of(flow);
    let Some((_, exchange)) =
        (spec.exchanges.iter_mut()).find(|(n, _)| n.value == binding.exchange)
    else {
        let names = flow.bus().exchange_names();
        let closest = eip_core::bus::closest(&binding.exchange, names.iter().map(String::as_str));
        let mut refusal = format!("unknown exchange `{}`", binding.exchange);
        if let Some(name) = closest {
            refusal.push_str(&format!("; did you mean `{name}`?"));
        }
        return Err(ControlError::Refused(vec![refusal]));
    };
    exchange.bindings.push(BindingSpec {
        at: None,
        key: binding.key.clone().map(Located::new),
        to: Located::new(binding.to.iter().cloned().map(Located::new).collect()),
    });
    let plan = validated(&spec)?;
    (plan.exchanges.into_iter())
        .find(|x| x.name == binding.exchange)
        .and_then(|mut x| x.bindings.pop())
        .ok_or_else(|| ControlError::Refused(vec!["the binding was not made".to_owned()]))
}

/// A flow with `flow`'s channels (name and kind, nothing else) and its exchanges (no
/// bindings): what a join or binding is checked against.
fn names_of(flow: &FlowView) -> FlowSpec {
    let mut spec = FlowSpec::default();
    for (channel, _) in flow.channels().iter() {
        let kind = match channel.kind() {
            ChannelKind::PointToPoint => KindSpec::PointToPoint,
            ChannelKind::PublishSubscribe => KindSpec::PublishSubscribe,
        };
        spec.channels.push((
            Located::new(channel.name().to_owned()),
            ChannelSpec::new(Located::new(kind), None),
        ));
    }
    for name in flow.bus().exchange_names() {
        spec.exchanges
            .push((Located::new(name), ExchangeSpec::default()));
    }
    spec
}

fn validated(spec: &FlowSpec) -> Result<crate::plan::Plan, ControlError> {
    crate::validate::validate(spec, std::path::Path::new("."))
        .map_err(|problems| ControlError::Refused(problems.iter().map(said).collect()))
}

/// A problem in a sentence, with its help.
fn said(problem: &Problem) -> String {
    match &problem.help {
        Some(help) => format!("{} ({help})", problem.message),
        None => problem.message.clone(),
    }
}
