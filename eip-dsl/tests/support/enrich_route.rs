//! The enricher's tests' flow: one route from the queue `orders` through the steps under test
//! to the queue `out`, and what reached its queues.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::{self, Flow, Output};
use eip_dsl::load;
use eip_dsl::step::Services;
use serde_json::Value;

/// A flow whose one route takes `orders` through `steps` to `out`.
pub fn yaml(steps: &str, redelivery: &str) -> String {
    format!(
        "
channels:
  orders: {{kind: point-to-point{redelivery}}}
  out: {{kind: point-to-point}}
routes:
  - from: orders
    steps:
{steps}
    to: out
"
    )
}

pub fn flow(steps: &str) -> Flow {
    flow_with(steps, "", &Services::new())
}

pub fn flow_with(steps: &str, redelivery: &str, services: &Services) -> Flow {
    let text = yaml(steps, redelivery);
    match load::load_str_with(&text, "flow.yaml", Path::new("."), services) {
        Ok(plan) => compile::compile(&plan).unwrap(),
        Err(errors) => panic!("{}", errors.render()),
    }
}

/// What is waiting on the queue `name`, taken and acknowledged.
pub async fn drain(flow: &Flow, name: &str) -> Vec<Message> {
    let Some(Channel::PointToPoint(queue)) = flow.channels().iter().find(|c| c.name() == name)
    else {
        panic!("{name} is a queue")
    };
    let mut receiver = queue.receiver();
    let mut got = Vec::new();
    while queue.stats().depth > 0 {
        let delivery = receiver.recv().await.unwrap();
        got.push(delivery.message().clone());
        delivery.ack();
    }
    got
}

pub fn payload(msg: &Message) -> Value {
    serde_json::from_slice(msg.payload()).unwrap()
}

pub fn order(customer: &str) -> Message {
    Message::builder(format!(r#"{{"order": 1, "customer_id": "{customer}"}}"#))
        .header("customer", customer)
        .build()
}

/// The death record's reason and error of a dead letter.
pub fn death(msg: &Message) -> (String, String) {
    let death = msg.death().unwrap().expect("a death record");
    (death.reason.to_string(), death.error.unwrap_or_default())
}

/// Runs `flow` until a dead letter arrives (at most 20 s), then stops it.
#[allow(dead_code)] // Only the tests of the limits wait for one.
pub async fn first_dead_letter(flow: &Flow, msg: Message) -> Message {
    let dead = Arc::new(Mutex::new(Vec::<Message>::new()));
    let seen = dead.clone();
    let output: Output = Arc::new(move |channel: &str, msg: &Message| {
        if channel == "dead-letters" {
            seen.lock().unwrap().push(msg.clone());
        }
    });
    let running = flow.start(output);
    flow.bus().publish("orders", msg).await.unwrap();
    for _ in 0..2000 {
        if !dead.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    running.stop(Duration::from_secs(2)).await;
    let dead = dead.lock().unwrap();
    dead.first().cloned().expect("a dead letter within 20 s")
}
