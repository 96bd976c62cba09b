//! What the tests of route steps share: a flow of one route from `orders` through the steps
//! under test to `out`, the problems of one that must not validate, and what reached a channel.

use std::path::Path;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::{self, Flow};
use eip_dsl::load;

/// The flow file: channels `orders` and `out` (and `more`, extra channel lines), and one
/// route from `orders` through `steps` (lines indented for `steps:`) to `out`.
pub fn yaml_with(more: &str, steps: &str) -> String {
    // No line for no extra channel: the tests' line numbers stay put.
    let more = match more {
        "" => String::new(),
        lines => format!("{lines}\n"),
    };
    format!(
        "
channels:
  orders: {{kind: point-to-point}}
  out: {{kind: point-to-point}}
{more}routes:
  - from: orders
    steps:
{steps}
    to: out
"
    )
}

/// [`yaml_with`] compiled, every channel in memory.
#[allow(dead_code)] // Not every test file compiles one this way.
pub fn flow_with(more: &str, steps: &str) -> Flow {
    match load::load_str(&yaml_with(more, steps), "flow.yaml", Path::new(".")) {
        Ok(plan) => compile::compile(&plan).expect("the flow compiles"),
        Err(errors) => panic!("{}", errors.render()),
    }
}

/// The flow of one route through `steps`.
#[allow(dead_code)]
pub fn flow(steps: &str) -> Flow {
    flow_with("", steps)
}

/// The rendered problems of a route through `steps` that must not validate.
#[allow(dead_code)]
pub fn problems(steps: &str) -> String {
    match load::load_str(&yaml_with("", steps), "flow.yaml", Path::new(".")) {
        Ok(_) => panic!("the flow validated:\n{steps}"),
        Err(errors) => errors.render(),
    }
}

/// Takes (and acknowledges) every message waiting on the queue `name`.
#[allow(dead_code)]
pub async fn drain(flow: &Flow, name: &str) -> Vec<Message> {
    let Some(Channel::PointToPoint(queue)) = flow.channels().iter().find(|c| c.name() == name)
    else {
        panic!("{name} is a queue of the flow")
    };
    let mut receiver = queue.receiver();
    let mut got = Vec::new();
    while queue.stats().depth > 0 {
        let delivery = receiver.recv().await.expect("a waiting message");
        got.push(delivery.message().clone());
        delivery.ack();
    }
    got
}

/// Hands each of `messages` to the flow's first route, in order; then what reached `out` and
/// `dead-letters`.
#[allow(dead_code)]
pub fn run_all(flow: &Flow, messages: Vec<Message>) -> (Vec<Message>, Vec<Message>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        for msg in messages {
            flow.routes()[0]
                .handle(msg)
                .await
                .expect("the route takes it");
        }
        (drain(flow, "out").await, drain(flow, "dead-letters").await)
    })
}
