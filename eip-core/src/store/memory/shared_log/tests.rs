use super::*;
use crate::store::memory::Overflow;

fn subscription(log: &Arc<SharedLog>) -> Arc<Queue> {
    let queue = |head| Queue::new(log.capacity, Overflow::Backpressure).reading(log.clone(), head);
    log.attach(queue).expect("log open")
}

fn stored(log: &SharedLog) -> usize {
    log.lock().entries.len()
}

fn take_all(queue: &Queue) -> Vec<Message> {
    let mut into = VecDeque::new();
    queue.try_take(None, usize::MAX, &mut into);
    into.into_iter().collect()
}

#[test]
fn an_entry_leaves_once_every_subscription_read_it_and_the_last_takes_it_out() {
    let log = Arc::new(SharedLog::new(10));
    let (a, b) = (subscription(&log), subscription(&log));
    let msg = Message::new("x");
    let id = msg.id();
    assert!(matches!(log.try_append(msg), Append::Stored(None)));
    assert_eq!(stored(&log), 1);
    assert_eq!(
        take_all(&a).iter().map(Message::id).collect::<Vec<_>>(),
        [id]
    );
    assert_eq!(stored(&log), 1, "`b` has not read it");
    assert_eq!(take_all(&b).len(), 1);
    assert_eq!(stored(&log), 0);
}

#[test]
fn a_subscription_attached_later_starts_at_the_head_and_is_not_waited_for() {
    let log = Arc::new(SharedLog::new(10));
    let a = subscription(&log);
    assert!(matches!(
        log.try_append(Message::new("1")),
        Append::Stored(None)
    ));
    let late = subscription(&log);
    assert!(matches!(
        log.try_append(Message::new("2")),
        Append::Stored(None)
    ));
    assert_eq!(take_all(&late).len(), 1);
    assert_eq!(take_all(&a).len(), 2);
    assert_eq!(stored(&log), 0);
}

#[test]
fn closing_a_subscription_reads_what_it_had_not_and_frees_the_log() {
    let log = Arc::new(SharedLog::new(10));
    let (a, b) = (subscription(&log), subscription(&log));
    for i in 0..3 {
        assert!(matches!(
            log.try_append(Message::new(i.to_string())),
            Append::Stored(None)
        ));
    }
    assert_eq!(take_all(&a).len(), 3);
    assert_eq!(b.close().len(), 3);
    assert_eq!(stored(&log), 0);
    assert!(matches!(
        log.try_append(Message::new("4")),
        Append::Stored(None)
    ));
    assert_eq!(stored(&log), 1, "stored for `a` alone");
    assert_eq!(take_all(&a).len(), 1);
    assert_eq!(stored(&log), 0);
}

#[test]
fn without_subscriptions_nothing_is_stored() {
    let log = SharedLog::new(1);
    for _ in 0..3 {
        assert!(matches!(
            log.try_append(Message::new("x")),
            Append::Stored(None)
        ));
    }
    assert_eq!(stored(&log), 0);
    assert_eq!(log.head(), 3);
}

#[test]
fn the_floor_never_lets_a_subscription_exceed_its_capacity() {
    let log = Arc::new(SharedLog::new(2));
    let a = subscription(&log);
    for _ in 0..2 {
        assert!(matches!(
            log.try_append(Message::new("x")),
            Append::Stored(None)
        ));
    }
    let b = subscription(&log);
    let settle_all = |q: &Queue| take_all(q).iter().for_each(|m| q.settle(m));
    settle_all(&a);
    // `a` is empty: a look raises the floor to `b`'s start, no further.
    assert!(log.accepts_now());
    for _ in 0..2 {
        assert!(matches!(
            log.try_append(Message::new("y")),
            Append::Stored(None)
        ));
    }
    settle_all(&a);
    assert!(!log.accepts_now(), "`b` holds two");
    assert!(matches!(log.try_append(Message::new("z")), Append::Full(_)));
    let taken = take_all(&b);
    assert_eq!(taken.len(), 2);
    assert!(!log.accepts_now(), "taken, but not settled");
    b.settle(&taken[0]);
    assert!(log.accepts_now());
    assert!(matches!(
        log.try_append(Message::new("z")),
        Append::Stored(None)
    ));
    settle_all(&a);
    assert!(matches!(log.try_append(Message::new("z")), Append::Full(_)));
}
