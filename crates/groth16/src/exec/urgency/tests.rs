use super::*;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

const LONG: Duration = Duration::from_secs(10);

/// Waits until `n` waiters are queued (threads started in turn).
fn queued(r: &Ranked<RankedWaiters<&'static str>>, n: usize) {
    let t = Instant::now();
    while r.lock().len() < n {
        assert!(t.elapsed() < LONG, "waiters never queued");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn urgencies_are_ordered_least_urgent_first() {
    assert!(Urgency::ALL.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(Urgency::default(), Urgency::Background);
    assert_eq!(Urgency::ALL.iter().max(), Some(&Urgency::Critical));
}

#[test]
fn an_urgent_waiter_overtakes_an_older_normal_one() {
    let mut w = RankedWaiters::new();
    let normal = w.join(Urgency::Normal, "porep");
    let urgent = w.join(Urgency::Critical, "winning");
    assert_eq!(w.first(), Some((Urgency::Critical, &"winning")));
    assert!(w.is_first(&urgent) && !w.is_first(&normal));
    assert!(w.outranks(Urgency::Normal), "the normal one stands back");
    assert!(!w.outranks(Urgency::Critical), "nobody outranks the top");
    assert!(w.leave(urgent));
    assert!(w.is_first(&normal), "then the older one goes");
    assert!(!w.outranks(Urgency::Normal));
    assert!(w.leave(normal));
    assert!(w.is_empty() && w.first().is_none());
}

#[test]
fn waiting_threads_go_most_urgent_first_whatever_the_arrival() {
    let r = Arc::new(Ranked::new(RankedWaiters::new()));
    let order = Arc::new(Mutex::new(Vec::new()));
    // The holder: everyone queues behind it.
    let holder = r.place(Urgency::Critical, "holder");
    let spawn = |u, name: &'static str| {
        let (r, order) = (r.clone(), order.clone());
        thread::spawn(move || {
            let p = r.place(u, name);
            assert!(p.wait_first(LONG), "{name} never went");
            order.lock().unwrap().push(name);
            drop(p);
        })
    };
    let mut threads = Vec::new();
    for (n, (u, name)) in [
        (Urgency::Normal, "old normal"),
        (Urgency::Low, "low"),
        (Urgency::Normal, "new normal"),
        (Urgency::High, "high"),
    ]
    .into_iter()
    .enumerate()
    {
        threads.push(spawn(u, name));
        queued(&r, n + 2);
    }
    drop(holder);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        ["high", "old normal", "new normal", "low"]
    );
    assert!(r.lock().is_empty());
}

#[test]
fn equal_urgency_is_first_come_first_served() {
    let mut w = RankedWaiters::new();
    let tickets: Vec<Ticket> = (0..4).map(|k| w.join(Urgency::High, k)).collect();
    for (k, t) in tickets.into_iter().enumerate() {
        assert_eq!(w.first(), Some((Urgency::High, &k)));
        assert!(w.is_first(&t));
        assert!(w.leave(t));
    }
    assert!(w.is_empty());
}

#[test]
fn a_timed_out_waiter_leaves_and_blocks_nobody_behind_it() {
    let r = Arc::new(Ranked::new(RankedWaiters::new()));
    let holder = r.place(Urgency::Critical, "holder");
    let r1 = r.clone();
    let impatient = thread::spawn(move || {
        let p = r1.place(Urgency::High, "impatient");
        let went = p.wait_first(Duration::from_millis(50));
        drop(p);
        went
    });
    queued(&r, 2);
    let r2 = r.clone();
    let behind = thread::spawn(move || {
        let p = r2.place(Urgency::Normal, "behind");
        let t = Instant::now();
        (p.wait_first(LONG), t.elapsed())
    });
    assert!(!impatient.join().unwrap(), "it timed out behind the holder");
    assert_eq!(r.lock().first(), Some((Urgency::Critical, &"holder")));
    queued(&r, 2);
    assert_eq!(
        r.lock().len(),
        2,
        "only the holder and the one behind are left"
    );
    drop(holder);
    let (went, waited) = behind.join().unwrap();
    assert!(went, "the one behind went once the holder left");
    assert!(waited < LONG / 2, "woken by the holder leaving: {waited:?}");
    assert!(r.lock().is_empty());
}

#[test]
fn a_dropped_waiter_leaves_and_wakes_those_behind_it() {
    let r = Arc::new(Ranked::new(RankedWaiters::new()));
    let ahead = r.place(Urgency::High, "ahead");
    let r1 = r.clone();
    let behind = thread::spawn(move || {
        let p = r1.place(Urgency::Low, "behind");
        let t = Instant::now();
        (p.wait_first(LONG), t.elapsed())
    });
    queued(&r, 2);
    thread::sleep(Duration::from_millis(20));
    assert!(!behind.is_finished(), "it waits behind the more urgent one");
    // Dropped without ever being served (a cancelled job's unit).
    drop(ahead);
    let (went, waited) = behind.join().unwrap();
    assert!(went);
    assert!(waited < LONG / 2, "the drop woke it: {waited:?}");
    assert!(r.lock().is_empty());
}

#[test]
fn waiters_served_together_leave_together_and_a_late_leave_is_harmless() {
    let mut w = RankedWaiters::new();
    let a1 = w.join(Urgency::Critical, "a");
    let b = w.join(Urgency::Normal, "b");
    let a2 = w.join(Urgency::High, "a");
    w.leave_where(|k| *k == "a");
    assert!(!w.holds(&a1) && !w.holds(&a2) && w.holds(&b));
    assert_eq!(w.first(), Some((Urgency::Normal, &"b")));
    assert!(!w.leave(a1), "it had left already");
    assert!(w.leave(b));
    assert!(w.is_empty());
}
