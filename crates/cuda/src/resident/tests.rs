use super::*;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::thread;

type Set = ResidentSet<&'static str, &'static str>;

fn set(total: u64) -> Arc<Set> {
    ResidentSet::with_poll(VramBudget::new(total), Duration::from_millis(5))
}

/// Acquires `id` (loading it as itself, counted in `loads`), or panics with what came back.
fn take(
    s: &Arc<Set>,
    id: &'static str,
    bytes: u64,
    priority: Urgency,
    wait: Wait,
    loads: &AtomicUsize,
) -> Held<&'static str, &'static str> {
    let got = s.acquire(id, bytes, 0, priority, wait, || {
        loads.fetch_add(1, SeqCst);
        Ok::<_, ()>(id)
    });
    match got.unwrap() {
        Acquired::Held(h) => h,
        Acquired::NeverFits => panic!("{id}: never fits"),
        Acquired::Busy { holders } => panic!("{id}: busy ({holders})"),
    }
}

/// A set of 100 bytes whose item "a" (60 bytes) a partition of `priority` holds.
fn a_in_use(priority: Urgency) -> (Arc<Set>, Arc<AtomicUsize>, Held<&'static str, &'static str>) {
    let s = set(100);
    let loads = Arc::new(AtomicUsize::new(0));
    let a = take(&s, "a", 60, priority, LONG, &loads);
    (s, loads, a)
}

/// Runs `f` with clones of the set and the load counter on a thread of its own.
fn on_thread<R: Send + 'static>(
    s: &Arc<Set>,
    loads: &Arc<AtomicUsize>,
    f: impl FnOnce(Arc<Set>, Arc<AtomicUsize>) -> R + Send + 'static,
) -> thread::JoinHandle<R> {
    let (s, loads) = (s.clone(), loads.clone());
    thread::spawn(move || f(s, loads))
}

fn resident(s: &Set, id: &str) -> bool {
    s.any(|i, _| *i == id)
}

const LONG: Wait = Wait::For(Duration::from_secs(10));

#[test]
fn idle_items_stay_until_their_room_is_needed_then_the_least_recent_goes() {
    let s = set(100);
    let loads = AtomicUsize::new(0);
    drop(take(&s, "a", 40, Urgency::Low, LONG, &loads));
    drop(take(&s, "b", 40, Urgency::Low, LONG, &loads));
    drop(take(&s, "a", 40, Urgency::Low, LONG, &loads)); // a is now the more recent
    assert_eq!(loads.load(SeqCst), 2, "a stayed resident");
    drop(take(&s, "c", 40, Urgency::Low, LONG, &loads));
    assert!(resident(&s, "a") && !resident(&s, "b") && resident(&s, "c"));
    assert_eq!(s.budget.used(), 80);
}

#[test]
fn an_item_too_large_never_waits_and_a_failed_load_leaves_no_trace() {
    let s = set(100);
    let never = s
        .acquire("big", 80, 30, Urgency::Critical, LONG, || {
            Ok::<_, ()>("big")
        })
        .unwrap();
    assert!(matches!(never, Acquired::NeverFits));
    let failed = s.acquire("bad", 50, 0, Urgency::Low, LONG, || {
        Err::<&str, _>("upload failed")
    });
    assert_eq!(failed.err(), Some("upload failed"));
    assert!(!resident(&s, "bad"));
    assert_eq!(s.budget.used(), 0, "its room was given back");
}

#[test]
fn staging_takes_only_free_room() {
    let s = set(100);
    let loads = AtomicUsize::new(0);
    drop(take(&s, "idle", 50, Urgency::Low, LONG, &loads));
    let staged = s
        .acquire("b", 60, 0, Urgency::Background, Wait::No, || {
            Ok::<_, ()>("b")
        })
        .unwrap();
    assert!(
        matches!(staged, Acquired::Busy { .. }),
        "staging evicted an idle key"
    );
    assert!(resident(&s, "idle"));
    drop(take(&s, "a", 60, Urgency::Low, LONG, &loads)); // a partition's request does evict it
    assert!(!resident(&s, "idle"));
    let a = take(&s, "a", 60, Urgency::Low, LONG, &loads);
    let staged = s
        .acquire("b", 60, 0, Urgency::Background, Wait::No, || {
            Ok::<_, ()>("b")
        })
        .unwrap();
    match staged {
        Acquired::Busy { holders } => assert!(holders.contains("\"a\" (1 in use)"), "{holders}"),
        _ => panic!("b was staged over an item in use"),
    }
    drop(a);
    let stage_b = || {
        s.acquire("b", 60, 0, Urgency::Background, Wait::No, || {
            Ok::<_, ()>("b")
        })
        .unwrap()
    };
    assert!(
        matches!(stage_b(), Acquired::Busy { .. }),
        "a, idle now, is not evicted either"
    );
    s.clear_idle();
    assert!(matches!(stage_b(), Acquired::Held(_)), "free room is taken");
}

#[test]
fn a_request_waits_for_an_item_in_use_to_fall_idle_then_evicts_it() {
    let (s, loads, a) = a_in_use(Urgency::Normal);
    let waiter = on_thread(&s, &loads, |s, loads| {
        let t = Instant::now();
        let b = take(&s, "b", 60, Urgency::Normal, LONG, &loads);
        (t.elapsed(), *b)
    });
    thread::sleep(Duration::from_millis(100));
    assert!(!resident(&s, "b"), "b waited while a was in use");
    drop(a);
    let (waited, got) = waiter.join().unwrap();
    assert_eq!(got, "b");
    assert!(waited >= Duration::from_millis(90), "{waited:?}");
    assert!(!resident(&s, "a"));
    assert!(s.budget.peak() <= 100, "the budget was never exceeded");
}

/// The PoRep/WindowPoSt case: a key in use by low-priority partitions drains for an urgent
/// one. Low requests for it wait (they do not keep it busy forever), the urgent key loads as
/// soon as the partitions in flight let go, and the low key comes back after.
#[test]
fn an_urgent_request_drains_a_less_urgent_item_and_it_returns_after() {
    let s = set(100);
    let loads = Arc::new(AtomicUsize::new(0));
    let order = Arc::new(Mutex::new(Vec::new()));
    let porep = take(&s, "porep", 60, Urgency::Low, LONG, &loads);
    let spawn = |id: &'static str, bytes, priority, hold: Duration| {
        let (s, loads, order) = (s.clone(), loads.clone(), order.clone());
        thread::spawn(move || {
            let h = take(&s, id, bytes, priority, LONG, &loads);
            order.lock().unwrap().push(id);
            thread::sleep(hold);
            drop(h);
        })
    };
    let urgent = spawn("window-post", 70, Urgency::High, Duration::from_millis(100));
    thread::sleep(Duration::from_millis(50));
    // A PoRep partition arriving now finds its key draining: it waits instead of holding it.
    let next_porep = spawn("porep", 60, Urgency::Low, Duration::ZERO);
    thread::sleep(Duration::from_millis(50));
    assert!(
        order.lock().unwrap().is_empty(),
        "both wait for the partition in flight"
    );
    drop(porep);
    urgent.join().unwrap();
    next_porep.join().unwrap();
    assert_eq!(*order.lock().unwrap(), ["window-post", "porep"]);
    assert_eq!(loads.load(SeqCst), 3, "porep, window-post, porep again");
    assert!(s.budget.peak() <= 100);
}

#[test]
fn a_less_urgent_request_takes_no_room_while_a_more_urgent_one_waits() {
    let (s, loads, a) = a_in_use(Urgency::Low);
    let urgent = on_thread(&s, &loads, |s, loads| {
        drop(take(&s, "b", 70, Urgency::Critical, LONG, &loads))
    });
    thread::sleep(Duration::from_millis(50));
    // 30 bytes are free, but taking them would keep b waiting longer.
    let c = s
        .acquire("c", 30, 0, Urgency::Low, Wait::No, || Ok::<_, ()>("c"))
        .unwrap();
    assert!(matches!(c, Acquired::Busy { .. }));
    // An equally or more urgent request is not held back.
    let d = s
        .acquire("d", 30, 0, Urgency::Critical, Wait::No, || Ok::<_, ()>("d"))
        .unwrap();
    assert!(matches!(d, Acquired::Held(_)));
    drop(d);
    drop(a);
    urgent.join().unwrap();
    assert!(resident(&s, "b"));
}

#[test]
fn a_wait_that_runs_out_says_who_holds_the_room() {
    let (s, _, _a) = a_in_use(Urgency::Low);
    let t = Instant::now();
    let got = s
        .acquire(
            "b",
            60,
            0,
            Urgency::Low,
            Wait::For(Duration::from_millis(60)),
            || Ok::<_, ()>("b"),
        )
        .unwrap();
    assert!(t.elapsed() >= Duration::from_millis(55));
    match got {
        Acquired::Busy { holders } => assert!(holders.contains("\"a\""), "{holders}"),
        _ => panic!("b loaded over a"),
    }
    // It no longer counts as waiting: a less urgent request may take free room again.
    let c = s
        .acquire("c", 30, 0, Urgency::Background, Wait::No, || {
            Ok::<_, ()>("c")
        })
        .unwrap();
    assert!(matches!(c, Acquired::Held(_)));
}

#[test]
fn when_the_wanted_request_runs_out_the_one_waiting_behind_it_is_wanted_at_once() {
    let (s, loads, a) = a_in_use(Urgency::Low);
    let patient = on_thread(&s, &loads, |s, loads| {
        *take(&s, "c", 70, Urgency::High, LONG, &loads)
    });
    thread::sleep(Duration::from_millis(30));
    // A more urgent request overtakes c, and runs out of time.
    let wait = Wait::For(Duration::from_millis(60));
    let got = s.acquire("b", 70, 0, Urgency::Critical, wait, || Ok::<_, ()>("b"));
    assert!(
        matches!(got, Ok(Acquired::Busy { .. })),
        "b ran out of time"
    );
    // c, still waiting, is wanted at once: the 30 free bytes stay free for it.
    let d = s
        .acquire("d", 30, 0, Urgency::Normal, Wait::No, || Ok::<_, ()>("d"))
        .unwrap();
    assert!(matches!(d, Acquired::Busy { .. }), "d took c's room");
    drop(a);
    assert_eq!(patient.join().unwrap(), "c");
    assert!(!resident(&s, "b") && resident(&s, "c"));
}
