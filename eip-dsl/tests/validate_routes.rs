//! Routes in a flow file: what they consume, where they may send, and that each sends by exactly
//! one of `to`, `choice` and `recipient-list`.

mod support {
    pub mod problems;
    pub mod queues;
    pub mod validate;
}

use support::problems::{at, help, only, problems};
use support::queues::with_queues;
use support::validate::load;

#[test]
fn a_route_consumes_a_channel_not_an_exchange() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: mx, to: out}",
        "exchanges:",
        "  mx: {}",
    ]));
    assert_eq!(
        p.message,
        "`from` must name a channel, and `mx` is an exchange"
    );
    assert_eq!(at(&p), (6, 12));
}

#[test]
fn two_routes_consuming_one_queue_are_refused() {
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out}",
        "  - {from: in, to: news}",
    ]));
    assert_eq!(
        p.message,
        "routes 1 and 2 both consume the point-to-point channel `in`: each message would reach only one of them"
    );
    assert_eq!(at(&p), (7, 12));
    assert!(help(&p).contains("publish-subscribe"));
    // A publish-subscribe channel gives each route every message: allowed.
    assert!(
        load(&with_queues(&[
            "routes:",
            "  - {from: news, to: out}",
            "  - {from: news, to: in}"
        ]))
        .is_ok()
    );
}

#[test]
fn taps_discards_bindings_and_alternates_take_channels_only() {
    let ps = problems(&with_queues(&[
        "routes:",
        "  - {from: in, filter: 'exists($.a)', discard: mx, wire-tap: mx, to: out}",
        "exchanges:",
        "  mx:",
        "    alternate: mx",
        "    bindings: [{key: a, to: mx}]",
    ]));
    let found: Vec<(&str, (u32, u32))> = ps.iter().map(|p| (p.message.as_str(), at(p))).collect();
    assert_eq!(
        found,
        [
            (
                "`discard` must name a channel, and `mx` is an exchange",
                (6, 48)
            ),
            (
                "`wire-tap` must name a channel, and `mx` is an exchange",
                (6, 62)
            ),
            (
                "`alternate` must name a channel, and `mx` is an exchange",
                (9, 16)
            ),
            (
                "`to` must name a channel, and `mx` is an exchange",
                (10, 29)
            ),
        ]
    );
}

#[test]
fn a_route_can_not_send_to_the_channel_it_consumes() {
    let p = only(&with_queues(&["routes:", "  - {from: in, to: [out, in]}"]));
    assert_eq!(
        p.message,
        "the route sends to `in`, the channel it consumes"
    );
    assert_eq!(at(&p), (6, 26));
    let p = only(&with_queues(&[
        "routes:",
        "  - {from: news, wire-tap: news, to: out}",
    ]));
    assert_eq!(
        p.message,
        "the route sends to `news`, the channel it consumes"
    );
}

#[test]
fn a_route_sends_by_exactly_one_of_to_choice_and_recipient_list() {
    let p = only(&with_queues(&["routes:", "  - {from: in}"]));
    assert_eq!(
        p.message,
        "route `route-1` sends nowhere: it needs `to`, `choice`, `recipient-list` or `load-balance`"
    );
    assert_eq!(at(&p), (6, 5));

    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, recipient-list: [news]}",
    ]));
    assert_eq!(
        p.message,
        "route `route-1` has both `to` and `recipient-list`: a route sends by exactly one of them"
    );
    assert_eq!(at(&p), (6, 41));

    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, otherwise: news}",
    ]));
    assert_eq!(p.message, "`otherwise` without `choice`");
    assert_eq!(at(&p), (6, 36));

    let p = only(&with_queues(&[
        "routes:",
        "  - {from: in, to: out, discard: news}",
    ]));
    assert_eq!(
        p.message,
        "`discard` without `filter`: no message is ever discarded"
    );

    let p = only(&with_queues(&["routes:", "  - {from: in, to: [out, out]}"]));
    assert_eq!(p.message, "`out` is listed twice in `to`");
    assert_eq!(at(&p), (6, 26));
}
