//! The flow-control tests' flows: routes over the queues `orders`, `big`, `small` and `other`,
//! run on tokio's paused clock, and what reached the queues.

use std::path::Path;

use eip_core::channel::{Channel, PointToPoint};
use eip_core::message::DeathReason;
use eip_dsl::compile::{self, Flow};
use eip_dsl::load;
use eip_dsl::plan::Plan;

const CHANNELS: &str = "
channels:
  orders: {kind: point-to-point}
  big: {kind: point-to-point}
  small: {kind: point-to-point}
  other: {kind: point-to-point}
";

/// The flow of `routes` over the queues `orders`, `big`, `small` and `other`, checked.
#[allow(dead_code)] // Not every file changes the plan before it compiles it.
pub fn plan(routes: &str) -> Plan {
    match load::load_str(&format!("{CHANNELS}{routes}"), "flow.yaml", Path::new(".")) {
        Ok(plan) => plan,
        Err(errors) => panic!("{}", errors.render()),
    }
}

/// The flow of `routes` over the queues, compiled.
pub fn flow(routes: &str) -> Flow {
    compile::compile(&plan(routes)).unwrap()
}

/// The queue `name` of `flow`.
pub fn queue(flow: &Flow, name: &str) -> PointToPoint {
    match flow.channels().iter().find(|c| c.name() == name) {
        Some(Channel::PointToPoint(q)) => q.clone(),
        _ => panic!("no queue {name}"),
    }
}

/// A runtime whose clock stands still until every task waits, then jumps to the next timer.
pub fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// The payloads waiting in `name`, in order, taken off it.
pub async fn drain(flow: &Flow, name: &str) -> Vec<String> {
    let mut receiver = queue(flow, name).receiver();
    let mut out = Vec::new();
    while let Ok(delivery) = receiver.try_recv() {
        out.push(delivery.message().payload_str().unwrap_or("").to_owned());
        delivery.ack();
    }
    out
}

/// The dead letters' reasons and errors, taken off the dead letter channel.
pub async fn dead_letters(flow: &Flow) -> Vec<(DeathReason, String)> {
    let mut receiver = queue(flow, "dead-letters").receiver();
    let mut out = Vec::new();
    while let Ok(delivery) = receiver.try_recv() {
        let death = delivery.message().death().unwrap().expect("a death record");
        out.push((death.reason, death.error.unwrap_or_default()));
        delivery.ack();
    }
    out
}
