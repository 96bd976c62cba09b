use super::*;

#[test]
fn off_until_enabled() {
    let guard = LoopGuard::new(LoopDetection::default());
    let id = MessageId::new();
    assert!(guard.admit(id, Moment::now()));
    assert!(guard.admit(id, Moment::now()));
    guard.enable();
    assert!(guard.admit(id, Moment::now()));
    assert!(!guard.admit(id, Moment::now()));
    assert_eq!(guard.duplicates(), 1);
}

#[test]
fn a_memory_kept_by_the_log_answers_as_an_own_one() {
    let log = Arc::new(SharedLog::new(4));
    let guard = LoopGuard::in_log(LoopDetection::default(), log.clone());
    let id = MessageId::new();
    assert!(!guard.is_on() && guard.clock().is_none());
    assert!(guard.admit(id, Moment::now()), "off: everything passes");
    guard.enable();
    assert!(guard.is_on() && log.remembers_ids());
    assert!(guard.would_admit(id));
    assert!(guard.admit(id, Moment::now()));
    assert!(!guard.would_admit(id));
    assert!(!guard.admit(id, Moment::now()));
    assert!(
        !log.admit_id(id, Moment::now()),
        "the log sees the same memory"
    );
    assert_eq!(guard.duplicates(), 1, "counted by the guard that refused");
}

#[test]
fn memory_is_bounded_by_count() {
    let guard = LoopGuard::new(LoopDetection {
        max_ids: 3,
        max_age: Duration::from_secs(60),
    });
    guard.enable();
    let ids: Vec<MessageId> = (0..4).map(|_| MessageId::new()).collect();
    for id in &ids {
        assert!(guard.admit(*id, Moment::now()));
    }
    assert!(
        guard.admit(ids[0], Moment::now()),
        "the oldest was forgotten"
    );
    assert!(!guard.admit(ids[3], Moment::now()));
}

#[test]
fn ids_out_of_order_are_remembered_and_forgotten_oldest_first() {
    let guard = LoopGuard::new(LoopDetection {
        max_ids: 3,
        max_age: Duration::from_secs(60),
    });
    guard.enable();
    let ids: Vec<MessageId> = (0..4).map(|_| MessageId::new()).collect();
    // Admitted 2, 0, 3, 1: 0 and 1 arrive after a greater id.
    for i in [2, 0, 3, 1] {
        assert!(guard.admit(ids[i], Moment::now()), "{i}");
    }
    // Three remembered (0, 3, 1); 2, admitted first, is forgotten.
    for i in [0, 3, 1] {
        assert!(!guard.would_admit(ids[i]), "{i}");
    }
    assert!(guard.would_admit(ids[2]));
    assert!(
        guard.admit(ids[2], Moment::now()),
        "the oldest was forgotten"
    );
    // Now 3, 1, 2: admitting a new id forgets 3, then 1.
    assert!(guard.admit(MessageId::new(), Moment::now()));
    assert!(guard.would_admit(ids[3]) && !guard.would_admit(ids[1]));
    let newest = MessageId::new();
    assert!(guard.admit(newest, Moment::now()));
    assert!(guard.would_admit(ids[1]) && !guard.would_admit(ids[2]));
    assert!(!guard.admit(newest, Moment::now()));
    assert_eq!(guard.duplicates(), 1);
}

#[test]
fn an_entry_is_24_bytes() {
    assert_eq!(std::mem::size_of::<Remembered>(), 24);
}

#[test]
fn ages_round_so_that_nothing_is_forgotten_early_and_wrap() {
    let max_age = Ages::longest(Duration::from_micros(19_500));
    assert_eq!(
        max_age, 21,
        "rounded up, plus the millisecond a moment may be late"
    );
    let at_ms = |now| Ages { now, max_age };
    // Admitted at 10 ms (read as 10): at 30 ms it may be only 19.01 ms old, and at 31 ms
    // too if that moment was read late, so kept.
    assert!(at_ms(30).young(10) && at_ms(31).young(10));
    assert!(!at_ms(32).young(10));
    // Across the wrap of the millisecond count.
    assert!(at_ms(5).young(Millis::MAX - 10));
    assert!(!at_ms(15).young(Millis::MAX - 10));
    // Admitted by a publish that read the time after this one.
    assert!(at_ms(10).young(11));
    assert!(at_ms(Millis::MAX).young(3));
    assert_eq!(Ages::longest(Duration::from_secs(u64::MAX)), Ages::LONGEST);
    assert_eq!(Ages::longest(Duration::ZERO), 1);
}

#[test]
fn numbers_order_across_their_wrap() {
    let entry = |number| Remembered {
        key: [0, 0],
        at: 0,
        number,
    };
    assert!(entry(u32::MAX).before(&entry(0)));
    assert!(entry(3).before(&entry(4)) && !entry(4).before(&entry(3)));
}

#[test]
fn a_moment_is_never_zero_and_fits_four_bytes() {
    assert_eq!(std::mem::size_of::<Option<Moment>>(), 4);
    assert_ne!(Moment::now().0.get(), 0);
}

#[test]
fn ids_kept_past_their_age_between_looks_are_not_remembered() {
    let guard = LoopGuard::new(LoopDetection {
        max_ids: 1000,
        max_age: Duration::from_millis(20),
    });
    guard.enable();
    let old: Vec<MessageId> = (0..3).map(|_| MessageId::new()).collect();
    for id in &old {
        assert!(guard.admit(*id, Moment::now()));
    }
    std::thread::sleep(Duration::from_millis(30));
    // New ids in order look at the oldest's age only every `AGE_STRIDE` admissions: the
    // old ones may still be held, but they count as forgotten.
    assert!(guard.admit(MessageId::new(), Moment::now()));
    assert!(old.iter().all(|id| guard.would_admit(*id)));
    assert!(
        guard.admit(old[1], Moment::now()),
        "an id older than max_age is stored again"
    );
    assert!(!guard.admit(old[1], Moment::now()), "and remembered anew");
}

#[test]
fn a_full_memory_forgets_by_count_whatever_the_age_looks() {
    let guard = LoopGuard::new(LoopDetection {
        max_ids: 5,
        max_age: Duration::from_secs(60),
    });
    guard.enable();
    let ids: Vec<MessageId> = (0..200).map(|_| MessageId::new()).collect();
    for id in &ids {
        assert!(guard.admit(*id, Moment::now()));
    }
    let remembered = ids.iter().filter(|id| !guard.would_admit(**id)).count();
    assert_eq!(remembered, 5);
    assert!(ids[195..].iter().all(|id| !guard.would_admit(*id)));
}

#[test]
fn memory_is_bounded_by_age() {
    let guard = LoopGuard::new(LoopDetection {
        max_ids: 100,
        max_age: Duration::from_millis(20),
    });
    guard.enable();
    let id = MessageId::new();
    assert!(guard.admit(id, Moment::now()));
    assert!(!guard.would_admit(id));
    std::thread::sleep(Duration::from_millis(30));
    assert!(guard.would_admit(id));
    assert!(
        guard.admit(id, Moment::now()),
        "an id older than max_age is forgotten"
    );
}
