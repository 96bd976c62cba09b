//! The load balancer (`load-balance`) in a route: round robin, failover, a deleted target, the
//! dry run, the builder, and what `eip validate` refuses.

mod support {
    pub mod paused_flow;
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use eip_core::Message;
use eip_core::message::DeathReason;
use eip_dsl::compile::InputMessage;
use support::paused_flow::{dead_letters, drain, flow, paused, plan, queue};
use support::problems::{at, help, only};
use support::queues::with_queues;

#[test]
fn round_robin_sends_each_message_to_the_next_target() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: [big, small, other]
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        for i in 0..7 {
            route.handle(Message::new(i.to_string())).await.unwrap();
        }
        assert_eq!(drain(&flow, "big").await, ["0", "3", "6"]);
        assert_eq!(drain(&flow, "small").await, ["1", "4"]);
        assert_eq!(drain(&flow, "other").await, ["2", "5"]);
        assert_eq!(route.stats().passed, 7);
    });
}

#[test]
fn failover_sends_to_the_first_open_target_and_dead_letters_when_none_is() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: {to: [big, small], strategy: failover}
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        route.handle(Message::new("1")).await.unwrap();
        assert_eq!(drain(&flow, "big").await, ["1"]);
        queue(&flow, "big").delete().await;
        route.handle(Message::new("2")).await.unwrap();
        route.handle(Message::new("3")).await.unwrap();
        assert_eq!(drain(&flow, "small").await, ["2", "3"]);
        queue(&flow, "small").delete().await;
        route.handle(Message::new("4")).await.unwrap();
        let dead = dead_letters(&flow).await;
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].0, DeathReason::ChannelDeleted);
        assert_eq!(dead[0].1, "channel `small` is closed");
    });
}

#[test]
fn round_robin_passes_over_a_deleted_target_evenly() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: {to: [big, small, other], strategy: round-robin}
",
    );
    paused().block_on(async {
        let route = &flow.routes()[0];
        queue(&flow, "small").delete().await;
        for i in 0..6 {
            route.handle(Message::new(i.to_string())).await.unwrap();
        }
        assert_eq!(drain(&flow, "big").await.len(), 3);
        assert_eq!(drain(&flow, "other").await.len(), 3);
    });
}

#[test]
fn the_dry_run_follows_the_pick() {
    let flow = flow(
        "
routes:
  - from: orders
    load-balance: {to: [big, small], strategy: failover}
",
    );
    let report = flow
        .dry_run(&InputMessage::parse(r#"{"to": "orders", "payload": 1}"#).unwrap())
        .unwrap();
    assert_eq!(report.stored, ["big", "orders"]);
}

#[test]
fn the_builder_makes_the_load_balancer_a_flow_file_makes() {
    use eip_core::router::Strategy;
    use eip_dsl::builder::{FlowBuilder, channel, route};
    use eip_dsl::plan::{ActionPlan, TargetRef};

    let file = plan(
        "
routes:
  - from: orders
    load-balance: {to: [big, small], strategy: failover}
",
    );
    let code = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("big", channel::point_to_point())
        .channel("small", channel::point_to_point())
        .route(route::from("orders").load_balance(["big", "small"], Strategy::Failover))
        .plan(".")
        .unwrap();
    for plan in [&file, &code] {
        let ActionPlan::LoadBalance { targets, strategy } = &plan.routes[0].action else {
            panic!("not a load balancer: {:?}", plan.routes[0].action);
        };
        assert_eq!(
            targets,
            &[
                TargetRef::Channel("big".into()),
                TargetRef::Channel("small".into())
            ]
        );
        assert_eq!(*strategy, Strategy::Failover);
    }
    let drawn = eip_dsl::graph::mermaid(&file);
    assert!(
        drawn.contains("failover 1") && drawn.contains("failover 2"),
        "{drawn}"
    );
}

#[test]
fn bad_load_balancers_are_refused_where_they_are_written() {
    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: {to: [out, news], strategy: fail-over}",
    ]));
    assert_eq!(p.message, "`strategy` can not be `fail-over`");
    assert_eq!(at(&p), (7, 47));
    assert!(help(&p).contains("`failover`"), "{}", help(&p));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: [out, 'orders.{$.region}']",
    ]));
    assert!(
        p.message
            .starts_with("`orders.{$.region}` is a template, and a load balancer"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (7, 26));

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: [out, in]",
    ]));
    assert_eq!(
        p.message,
        "the route sends to `in`, the channel it consumes"
    );

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    to: out",
        "    load-balance: [out, news]",
    ]));
    assert_eq!(
        p.message,
        "route `route-1` has both `to` and `load-balance`: a route sends by exactly one of them"
    );

    let p = only(&with_queues(&[
        "routes:",
        "  - from: in",
        "    load-balance: {strategy: failover}",
    ]));
    assert!(p.message.ends_with("has no `to`"), "{}", p.message);
}
