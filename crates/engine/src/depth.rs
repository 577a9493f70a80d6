//! How many partitions the engine holds between synthesis start and proof end: as many as
//! keep the provers busy, not as many as the memory budget would hold.
//!
//! A partition in flight holds its witness (3.9 GB page-locked for a 32 GiB PoRep) from the
//! moment synthesis starts until its proof is done. The budget alone let the synthesis workers
//! fill the host (15 partitions in flight where the GPU consumed one every 2.4 s and a
//! partition synthesized in a few), memory no proof needed, and that a process beside the
//! daemon then could not have. By Little's law the provers stay busy with
//!
//! ```text
//! depth = ceil(synthesis / cycle) + provers + slack
//! ```
//!
//! partitions in flight, where `synthesis` is the time the synthesis pool takes a partition,
//! `cycle` the time the devices take one, `provers` the partitions being proved, and `slack`
//! the prove queue's depth. Until both times are measured for a kind, the depth is
//! `provers + slack + 1`; it never exceeds what the workers could hold (synthesis workers +
//! slack + provers). Urgent partitions ([`Priority::is_urgent`]) are counted
//! but never held back: they have lanes of their own.
//!
//! Both times are measured so that the depth cannot feed itself:
//! - The synthesis workers share one thread pool, so a partition synthesizes about as many
//!   times slower as partitions share the pool with it. Its time is divided by its sharers
//!   (how many synthesized, on average over its synthesis): undivided, a deeper
//!   pipeline would synthesize more at once, measure each slower, and deepen again.
//! - The cycle is the longer of two lower bounds: a partition's busy time on its device (over
//!   the devices), and a prover's time over the provers a device has. The second alone reads
//!   half the cycle when the first partition is proved with no other (its device to itself).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zkforge_circuits::ProofKind;

use crate::job::Priority;

/// Weight of a new measurement in the running averages.
const WEIGHT: f64 = 0.3;

/// The pipeline's shape: provers and the bound the workers set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub devices: usize,
    pub provers_per_device: usize,
    /// Synthesized partitions that may wait for a prover (`prove_queue_depth`).
    pub slack: usize,
    pub synthesis_workers: usize,
}

impl Shape {
    fn provers(self) -> usize {
        self.devices * self.provers_per_device
    }

    /// Before any measurement.
    pub fn initial(self) -> usize {
        (self.provers() + self.slack + 1).min(self.most())
    }

    /// What the workers could hold at most.
    pub fn most(self) -> usize {
        self.synthesis_workers + self.slack + self.provers()
    }
}

/// Running averages of one kind's partitions, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Rates {
    /// The pool's time for one partition (divided among its sharers).
    synthesis: Option<f64>,
    /// A prover's time for one partition, and the device's busy time in it.
    prove: Option<f64>,
    busy: Option<f64>,
}

fn average(old: Option<f64>, new: f64) -> Option<f64> {
    Some(old.map_or(new, |o| o + WEIGHT * (new - o)))
}

/// The depth one kind's partitions are admitted to, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct KindDepth {
    pub kind: ProofKind,
    pub depth: usize,
    /// Measured synthesis time and device cycle a partition, seconds; `None` before the
    /// first of each.
    pub synthesis_secs: Option<f64>,
    pub cycle_secs: Option<f64>,
    pub why: String,
}

/// Partitions in flight, admitted to the measured depth.
pub(crate) struct Depth {
    shape: Shape,
    /// A fixed depth (`engine.pipeline_depth`), or `None`: measured.
    fixed: Option<usize>,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    bulk: usize,
    urgent: usize,
    /// Partitions synthesizing now, urgent ones included (they share the pool) ...
    synthesizing: usize,
    /// ... and its integral over time (partition-seconds) up to `since`.
    shared: f64,
    since: Option<Instant>,
    rates: HashMap<ProofKind, Rates>,
}

impl State {
    /// Brings the integral of partitions synthesizing up to `now`.
    fn advance(&mut self, now: Instant) {
        if let Some(since) = self.since {
            self.shared +=
                self.synthesizing as f64 * now.saturating_duration_since(since).as_secs_f64();
        }
        self.since = Some(self.since.map_or(now, |t| t.max(now)));
    }
}

/// A partition's place in flight; given back when dropped (its proof done, or abandoned).
pub(crate) struct InFlight {
    depth: Arc<Depth>,
    urgent: bool,
}

impl Depth {
    pub fn new(shape: Shape, fixed: Option<usize>) -> Arc<Self> {
        Arc::new(Self {
            shape,
            fixed: fixed.map(|d| d.max(1)),
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a partition of `kind`: at once for an urgent one; for another, once fewer
    /// bulk partitions than the kind's depth are in flight, checking `give_up` every `poll`
    /// (`None` when it gave up).
    pub fn enter(
        self: &Arc<Self>,
        kind: ProofKind,
        priority: Priority,
        poll: Duration,
        give_up: impl Fn() -> bool,
    ) -> Option<InFlight> {
        let urgent = priority.is_urgent();
        let mut s = self.lock();
        if !urgent {
            loop {
                if s.bulk < self.depth_of(&s, kind).depth {
                    break;
                }
                if give_up() {
                    return None;
                }
                s = self
                    .freed
                    .wait_timeout(s, poll)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        *if urgent { &mut s.urgent } else { &mut s.bulk } += 1;
        Some(InFlight {
            depth: self.clone(),
            urgent,
        })
    }

    /// A partition starts synthesizing; it shares the pool until the guard drops.
    pub fn synthesis_starts(self: &Arc<Self>) -> Synthesizing {
        self.synthesis_starts_at(Instant::now())
    }

    fn synthesis_starts_at(self: &Arc<Self>, now: Instant) -> Synthesizing {
        let mut s = self.lock();
        s.advance(now);
        s.synthesizing += 1;
        Synthesizing {
            depth: self.clone(),
            started: now,
            shared_at_start: s.shared,
        }
    }

    /// A partition of `kind` proved in `secs` by a prover, its device busy for `busy_secs`.
    pub fn proved(&self, kind: ProofKind, secs: f64, busy_secs: f64) {
        let mut s = self.lock();
        let r = s.rates.entry(kind).or_default();
        r.prove = average(r.prove, secs);
        r.busy = average(r.busy, busy_secs);
        drop(s);
        self.freed.notify_all();
    }

    /// Partitions in flight now (bulk, urgent).
    pub fn in_flight(&self) -> (usize, usize) {
        let s = self.lock();
        (s.bulk, s.urgent)
    }

    /// Each measured kind's depth, and the depth before any measurement.
    pub fn report(&self) -> (Vec<KindDepth>, KindDepth) {
        let s = self.lock();
        let mut kinds: Vec<_> = s.rates.keys().map(|&k| self.depth_of(&s, k)).collect();
        kinds.sort_by_key(|d| ProofKind::ALL.iter().position(|&k| k == d.kind));
        (kinds, self.unmeasured(ProofKind::PoRep))
    }

    /// What a kind that has not been measured yet is admitted to.
    pub fn initial(&self) -> usize {
        self.fixed.unwrap_or(self.shape.initial())
    }

    fn unmeasured(&self, kind: ProofKind) -> KindDepth {
        let sh = self.shape;
        KindDepth {
            kind,
            depth: self.initial(),
            synthesis_secs: None,
            cycle_secs: None,
            why: match self.fixed {
                Some(d) => format!("engine.pipeline_depth = {d}"),
                None => format!(
                    "not measured yet: {} provers + {} queued + 1 synthesizing",
                    sh.provers(),
                    sh.slack
                ),
            },
        }
    }

    fn depth_of(&self, s: &State, kind: ProofKind) -> KindDepth {
        let sh = self.shape;
        let r = s.rates.get(&kind).copied().unwrap_or_default();
        let cycle = match (r.prove, r.busy) {
            (Some(p), Some(b)) => Some(b.max(p / sh.provers_per_device.max(1) as f64)),
            _ => None,
        }
        .map(|c| c / sh.devices.max(1) as f64);
        let (Some(synthesis), Some(cycle), None) = (r.synthesis, cycle, self.fixed) else {
            return KindDepth {
                synthesis_secs: r.synthesis,
                cycle_secs: cycle,
                ..self.unmeasured(kind)
            };
        };
        let synthesizing = (synthesis / cycle.max(1e-3)).ceil() as usize;
        let wanted = synthesizing + sh.provers() + sh.slack;
        let depth = wanted.clamp(sh.provers() + 1, sh.most().max(sh.provers() + 1));
        KindDepth {
            kind,
            depth,
            synthesis_secs: Some(synthesis),
            cycle_secs: Some(cycle),
            why: format!(
                "synthesis {synthesis:.2} s / cycle {cycle:.2} s -> {synthesizing} \
                 synthesizing + {} provers + {} queued{}",
                sh.provers(),
                sh.slack,
                if depth < wanted {
                    format!(" (at most {} with these workers)", sh.most())
                } else {
                    String::new()
                }
            ),
        }
    }
}

/// A partition synthesizing (`Depth::synthesis_starts`).
pub(crate) struct Synthesizing {
    depth: Arc<Depth>,
    started: Instant,
    shared_at_start: f64,
}

impl Synthesizing {
    /// A bulk partition of `kind` synthesized: the pool's time for one partition is its time
    /// over the partitions that shared the pool meanwhile.
    pub fn measured(&self, kind: ProofKind) {
        self.measured_at(kind, Instant::now());
    }

    fn measured_at(&self, kind: ProofKind, now: Instant) {
        let mut s = self.depth.lock();
        s.advance(now);
        let secs = now.saturating_duration_since(self.started).as_secs_f64();
        let sharers = if secs > 0.0 {
            ((s.shared - self.shared_at_start) / secs).max(1.0)
        } else {
            1.0
        };
        let r = s.rates.entry(kind).or_default();
        r.synthesis = average(r.synthesis, secs / sharers);
        drop(s);
        self.depth.freed.notify_all();
    }
}

impl Drop for Synthesizing {
    fn drop(&mut self) {
        let mut s = self.depth.lock();
        s.advance(Instant::now());
        s.synthesizing -= 1;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.depth.lock();
        *if self.urgent {
            &mut s.urgent
        } else {
            &mut s.bulk
        } -= 1;
        drop(s);
        self.depth.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: Shape = Shape {
        devices: 1,
        provers_per_device: 2,
        slack: 2,
        synthesis_workers: 16,
    };
    const POLL: Duration = Duration::from_millis(5);

    /// One partition synthesized alone in `secs`.
    fn synthesized(d: &Arc<Depth>, secs: f64) {
        let t0 = Instant::now();
        d.synthesis_starts_at(t0)
            .measured_at(ProofKind::PoRep, t0 + Duration::from_secs_f64(secs));
    }

    #[test]
    fn the_depth_keeps_the_provers_busy_and_no_more() {
        let d = Depth::new(SHAPE, None);
        assert_eq!(d.initial(), 5, "2 provers + 2 queued + 1 synthesizing");
        // A 32 GiB PoRep on a 16 GiB card (docs/perf.md): 2.4 s a partition on the device,
        // two provers each holding one for 4.6 s; synthesis 3 s.
        synthesized(&d, 3.0);
        d.proved(ProofKind::PoRep, 4.6, 2.4);
        let (kinds, _) = d.report();
        assert_eq!(kinds[0].depth, 2 + 2 + 2, "{kinds:?}");
        assert!((kinds[0].cycle_secs.unwrap() - 2.4).abs() < 1e-9);
        // Synthesis ten times the cycle: ten synthesizing, within the 16 workers' bound.
        let d = Depth::new(SHAPE, None);
        synthesized(&d, 24.0);
        d.proved(ProofKind::PoRep, 4.6, 2.4);
        assert_eq!(d.report().0[0].depth, 10 + 4);
        // A hundred times: no more than the workers could hold.
        let d = Depth::new(SHAPE, None);
        synthesized(&d, 240.0);
        d.proved(ProofKind::PoRep, 4.6, 2.4);
        let deepest = &d.report().0[0];
        assert_eq!(deepest.depth, SHAPE.most());
        assert!(deepest.why.contains("at most 20"), "{}", deepest.why);
    }

    /// The first partitions of a batch, as the H100 box measured them on a 16 GiB card (a 32
    /// GiB PoRep): five synthesized side by side in 4.2-5.3 s each (one alone takes 1.0 s),
    /// and the first proof, with the device to itself, in 2.6 s. The depth stays at the
    /// steady state's five (synthesis under the cycle); before, it read 4.6 s of synthesis
    /// over a 1.3 s cycle and admitted eight.
    #[test]
    fn a_batch_start_does_not_deepen_the_pipeline() {
        let d = Depth::new(SHAPE, None);
        let t0 = Instant::now();
        let five: Vec<_> = (0..5).map(|_| d.synthesis_starts_at(t0)).collect();
        for (s, secs) in five.into_iter().zip([4.2, 4.6, 4.9, 5.1, 5.3]) {
            s.measured_at(ProofKind::PoRep, t0 + Duration::from_secs_f64(secs));
        }
        d.proved(ProofKind::PoRep, 2.6, 2.6);
        let porep = &d.report().0[0];
        assert!((porep.cycle_secs.unwrap() - 2.6).abs() < 1e-9, "{porep:?}");
        assert!(porep.synthesis_secs.unwrap() < 1.1, "{porep:?}");
        assert_eq!(porep.depth, 1 + 2 + 2, "{porep:?}");
        // Alone, a partition counts whole: one sharer.
        synthesized(&d, 1.0);
        assert!(d.report().0[0].synthesis_secs.unwrap() < 1.1);
    }

    #[test]
    fn bulk_partitions_wait_at_the_depth_and_urgent_ones_never() {
        let d = Depth::new(SHAPE, Some(2));
        let a = d
            .enter(ProofKind::PoRep, Priority::Normal, POLL, || false)
            .unwrap();
        let _b = d
            .enter(ProofKind::PoRep, Priority::Normal, POLL, || false)
            .unwrap();
        assert!(
            d.enter(ProofKind::PoRep, Priority::Normal, POLL, || true)
                .is_none(),
            "a third bulk partition waits (here: gives up)"
        );
        let urgent = d.enter(ProofKind::WinningPost, Priority::Critical, POLL, || true);
        assert!(urgent.is_some(), "an urgent partition is never held back");
        assert_eq!(d.in_flight(), (2, 1));
        let d2 = d.clone();
        let waiting = std::thread::spawn(move || {
            d2.enter(ProofKind::PoRep, Priority::Normal, POLL, || false)
                .is_some()
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(!waiting.is_finished(), "it waits for a place");
        drop(a);
        assert!(waiting.join().unwrap(), "a proof's end frees its place");
        drop(urgent);
        assert_eq!(d.in_flight().1, 0);
    }
}
