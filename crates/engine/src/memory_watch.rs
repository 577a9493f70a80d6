//! The thread that keeps the engine within what the host leaves it (`host_memory`): it reads
//! the host every [`WATCH_EVERY`], moves the budget's limit, gives memory back in order (idle
//! pooled buffers, then keys no job holds; partitions in flight finish, new ones wait for the
//! limit), and returns idle buffers to the system once no partition has been in flight for
//! `idle_buffer_secs`.
//!
//! The limit moves at every reading, but a log line and a TIMELINE event mark only a move of
//! [`RECORD_STEP`] or more since the last one marked, a return to the budget, or memory given
//! back: a host whose use ramps up moves the limit at every reading for many seconds (a
//! process taking 24 GiB made 56 lines in 14 s on the H100 box).

use std::time::{Duration, Instant};

use crate::host_memory::{Follower, HostReading, LimitChange, WATCH_EVERY};
use crate::pipeline::Pipeline;
use crate::timeline::{StageEvent, TimelineEvent};

/// The least move of the limit a log line marks (unless it returns to the budget or memory
/// was given back).
const RECORD_STEP: u64 = 1 << 30;

pub(crate) fn watch_loop(s: &Pipeline, margin: u64) {
    let ceiling = s.budget.total();
    let mut follower = Follower::new(ceiling, margin);
    let mut recorded = ceiling;
    let mut idle_since = Some(Instant::now());
    let idle_for = Duration::from_secs(s.config.idle_buffer_secs);
    while !s.synth_queue.is_closed() {
        std::thread::sleep(WATCH_EVERY);
        let Ok(host) = HostReading::now() else {
            continue;
        };
        let held = s.budget.used();
        if let Some(change) = follower.follow(held, &host, Instant::now()) {
            s.budget.set_limit(change.to);
            let (done, freed) = give_back(s, change.to);
            let step = change.to.abs_diff(recorded) >= RECORD_STEP;
            if step || freed || (change.to == ceiling && recorded != ceiling) {
                let from = std::mem::replace(&mut recorded, change.to);
                record(s, &LimitChange { from, ..change }, held, &host, &done);
            }
        } else if held > follower.limit() {
            // Still over (memory on its way out, a key released since): give back again.
            give_back(s, follower.limit());
        }
        let (bulk, urgent) = s.depth.in_flight();
        if bulk + urgent > 0 {
            idle_since = None;
        } else if idle_since.get_or_insert_with(Instant::now).elapsed() >= idle_for {
            s.budget.shrink_idle_to(0);
        }
    }
}

/// Frees what the engine holds beyond `limit` that no partition needs: idle pooled buffers,
/// then keys no job holds, least recently used first. Says what it did, and whether it freed
/// anything.
fn give_back(s: &Pipeline, limit: u64) -> (String, bool) {
    let before = s.budget.used();
    let mut over = s.budget.shrink_idle_to(limit);
    let freed_idle = before.saturating_sub(s.budget.used());
    let mut evicted = Vec::new();
    while over > 0 {
        match s.srs.evict_least_recently_used() {
            Some(circuit) => evicted.push(circuit),
            None => break,
        }
        over = s.budget.shrink_idle_to(limit);
    }
    let mut done = Vec::new();
    if freed_idle > 0 {
        done.push(format!("freed {} of idle buffers", gib(freed_idle)));
    }
    if !evicted.is_empty() {
        done.push(format!("evicted {}", evicted.join(", ")));
    }
    if over > 0 {
        done.push(format!(
            "{} still over: no new partition starts until the partitions in flight finish",
            gib(over)
        ));
    }
    let freed = freed_idle > 0 || !evicted.is_empty();
    (done.join("; "), freed)
}

fn record(s: &Pipeline, change: &LimitChange, held: u64, host: &HostReading, done: &str) {
    let cgroup = host.cgroup.map_or(String::new(), |c| {
        format!(", cgroup {} of {}", gib(c.current), gib(c.max))
    });
    let pressure = host
        .pressure
        .map_or("no PSI".to_string(), |p| format!("pressure {p:.1}%"));
    let floor = if s.budget.below_floor() {
        format!(
            "; below engine.memory_floor ({}): bulk submissions refused",
            gib(s.budget.floor())
        )
    } else {
        String::new()
    };
    tracing::info!(
        from = change.from,
        to = change.to,
        "host memory: the engine may hold {} (was {}); it holds {}, the host has {} left{cgroup}, \
         {pressure}{}{floor}",
        gib(change.to),
        gib(change.from),
        gib(held),
        gib(host.room()),
        if done.is_empty() {
            String::new()
        } else {
            format!("; {done}")
        }
    );
    s.telemetry
        .record(TimelineEvent::new(StageEvent::MemoryLimit, 0).bytes(change.to));
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}
