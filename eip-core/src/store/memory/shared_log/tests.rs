use super::*;
use crate::message::MessageId;
use crate::store::Take;
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

/// The id of what a take of one got, or what it said instead.
fn take_one(queue: &Queue) -> Result<MessageId, &'static str> {
    match queue.try_take_one() {
        TakeOne::Taken(msg) => Ok(msg.id()),
        TakeOne::Empty => Err("empty"),
        TakeOne::Closed => Err("closed"),
        TakeOne::Batched => {
            let mut into = VecDeque::new();
            match queue.try_take(None, 1, &mut into) {
                Take::Taken => into.pop_front().map(|m| m.id()).ok_or("taken, but none"),
                Take::Empty => Err("empty"),
                Take::Closed => Err("closed"),
            }
        }
    }
}

/// Depth, in flight, accepted and delivered.
fn counts(queue: &Queue) -> (usize, usize, u64, u64) {
    let stats = queue.stats();
    (
        stats.depth,
        stats.in_flight,
        stats.accepted,
        stats.delivered,
    )
}

#[test]
fn a_take_straight_from_the_log_is_counted_and_a_put_back_message_comes_first() {
    let log = Arc::new(SharedLog::new(10));
    let q = subscription(&log);
    let (m1, m2) = (Message::new("1"), Message::new("2"));
    let (id1, id2) = (m1.id(), m2.id());
    for m in [m1.clone(), m2] {
        assert!(matches!(log.try_append(m), Append::Stored(None)));
    }
    assert_eq!(take_one(&q), Ok(id1));
    assert_eq!(counts(&q), (1, 1, 2, 1));

    // Put back: the queue holds it now, and the next take must not go past it to the log
    assert!(q.requeue(m1).is_ok());
    let stats = q.stats();
    assert_eq!((stats.depth, stats.in_flight, stats.requeued), (2, 0, 1));
    assert!(matches!(
        q.try_take_first(1, &mut VecDeque::new()),
        TakeOne::Batched
    ));
    assert_eq!(take_one(&q), Ok(id1), "the put-back message comes first");
    assert_eq!(take_one(&q), Ok(id2), "then the log again, straight");
    assert_eq!(take_one(&q), Err("empty"));
    assert_eq!(counts(&q), (0, 2, 2, 3));
    q.settle(&Message::new("any"));
    q.settle(&Message::new("any"));
    let stats = q.stats();
    assert_eq!((stats.in_flight, stats.acked), (0, 2));
}

#[test]
fn a_closed_subscription_takes_nothing_more_from_the_log_and_holds_no_one_up() {
    let log = Arc::new(SharedLog::new(10));
    let (a, b) = (subscription(&log), subscription(&log));
    let first = Message::new("1");
    let id = first.id();
    assert!(matches!(log.try_append(first), Append::Stored(None)));
    assert_eq!(take_one(&a), Ok(id));
    assert!(a.close().is_empty());
    let later = Message::new("2");
    let later_id = later.id();
    assert!(matches!(log.try_append(later), Append::Stored(None)));
    assert_eq!(take_one(&a), Err("closed"));
    assert_eq!(take_one(&b), Ok(id));
    assert_eq!(take_one(&b), Ok(later_id));
    assert_eq!(stored(&log), 0, "nothing waits for the closed one");
}

#[test]
fn an_append_of_a_copy_stores_what_an_append_stores_and_declines_when_it_must_wait() {
    use crate::channel::{LoopDetection, LoopGuard};
    let log = Arc::new(SharedLog::new(2));
    LoopGuard::in_log(LoopDetection::default(), log.clone()).enable();
    let sub = subscription(&log);
    let msg = Message::new("x");
    let now = Some(Moment::now());
    let guard = crate::channel::pin();
    assert!(matches!(
        log.try_append_copy(&msg, now, &guard),
        Copied::Stored(None)
    ));
    assert!(matches!(
        log.try_append_copy(&msg, now, &guard),
        Copied::Duplicate
    ));
    assert_eq!(log.duplicates(), 1);
    assert!(matches!(
        log.try_append_copy(&msg, None, &guard),
        Copied::Stored(None)
    ));
    // Full: nothing stored, the id not remembered; the caller appends the message itself.
    let later = Message::new("y");
    assert!(matches!(
        log.try_append_copy(&later, now, &guard),
        Copied::Declined
    ));
    assert_eq!(stored(&log), 2);
    assert!(log.would_admit_id(later.id(), Moment::now()));
    assert_eq!(
        take_all(&sub).iter().map(Message::id).collect::<Vec<_>>(),
        [msg.id(), msg.id()]
    );
}
