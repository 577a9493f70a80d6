//! One batch over several daemons (`bench batch --addr A,B,...`): a provider measuring a
//! fleet of GPU hosts from one place. Each request goes to the daemon with the fewest of this
//! batch's proofs outstanding (submitted, not yet answered), ties taken in turn; the report
//! has the fleet's numbers and each daemon's.
//!
//! Least-outstanding rather than round robin: a faster host answers sooner and so is sent
//! more, as Curio's scheduler would hand work to whichever host has room. Its known weakness,
//! kept because this is a benchmark that should show it: a daemon that fails requests at once
//! is always least loaded and draws more of them; its row's failures say so.

use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use serde::Serialize;

use super::address::{connect, Client, DaemonAddr};
use super::batch::{
    progress_bar, prove_one, run_prefix, save, summarize, verify_records, BatchConfig, BatchReport,
    ProofRecord, Spread,
};
use super::report::{first_column_width, proof_line, summary};

/// A batch's numbers for the whole fleet and for each daemon, as `--json` writes them when
/// there are several.
#[derive(Clone, Debug, Serialize)]
pub struct FleetReport {
    /// Every proof; `addr` lists the daemons.
    pub fleet: BatchReport,
    /// One report per daemon, in the order given; their proofs per minute add up to the
    /// fleet's (all share the batch's wall time).
    pub daemons: Vec<BatchReport>,
}

/// Chooses the daemon for each request: fewest outstanding, ties in turn.
#[derive(Debug)]
pub struct Dispatcher {
    state: Mutex<DispatchState>,
}

#[derive(Debug)]
struct DispatchState {
    outstanding: Vec<usize>,
    /// The most each daemon had outstanding at once.
    peak: Vec<usize>,
    /// Where the search for the least loaded daemon starts: after the last pick, so that
    /// equally loaded daemons take turns.
    next: usize,
}

impl Dispatcher {
    pub fn new(daemons: usize) -> Self {
        Self {
            state: Mutex::new(DispatchState {
                outstanding: vec![0; daemons],
                peak: vec![0; daemons],
                next: 0,
            }),
        }
    }

    /// Picks a daemon and counts a request outstanding there.
    pub fn acquire(&self) -> usize {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let n = s.outstanding.len();
        let pick = (0..n)
            .map(|i| (s.next + i) % n)
            .min_by_key(|&d| s.outstanding[d])
            .expect("at least one daemon");
        s.outstanding[pick] += 1;
        s.peak[pick] = s.peak[pick].max(s.outstanding[pick]);
        s.next = (pick + 1) % n;
        pick
    }

    /// The request sent to `daemon` was answered.
    pub fn release(&self, daemon: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.outstanding[daemon] -= 1;
    }

    /// The most requests each daemon had outstanding at once.
    pub fn peaks(&self) -> Vec<usize> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .peak
            .clone()
    }
}

/// Connects to every daemon at once; the first that cannot be reached fails the batch,
/// named, before any proof is sent.
async fn connect_all(addrs: &[DaemonAddr], timeout: Duration) -> Result<Vec<Client>> {
    let handles: Vec<_> = addrs
        .iter()
        .cloned()
        .map(|a| tokio::spawn(async move { connect(&a, timeout).await }))
        .collect();
    let mut clients = Vec::with_capacity(handles.len());
    for h in handles {
        clients.push(h.await.context("a connect task panicked")??);
    }
    Ok(clients)
}

/// Runs `config`'s batch over `addrs` (`config.addr` is not used): `concurrency` proofs in
/// flight over the whole fleet, each sent to the least loaded daemon, saved as it arrives,
/// verified after the timed part.
pub async fn run_fleet(config: &BatchConfig, addrs: &[DaemonAddr]) -> Result<FleetReport> {
    ensure!(!addrs.is_empty(), "no daemon address");
    ensure!(config.count > 0, "the count must be positive");
    ensure!(config.concurrency > 0, "the concurrency must be positive");
    ensure!(
        !config.verify || config.input.can_verify(),
        "--verify needs --fixtures DIR (the public values of the inputs)"
    );
    if let Some(dir) = &config.save_proofs {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let clients = connect_all(addrs, config.connect_timeout).await?;
    let fleet_label = addrs
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",");
    tracing::info!(addrs = %fleet_label, count = config.count, concurrency = config.concurrency, "batch");
    let bar = progress_bar(config);
    let prefix = run_prefix();
    let dispatcher = Arc::new(Dispatcher::new(addrs.len()));
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let show_daemon = addrs.len() > 1;
    let start = Instant::now();
    let workers = (0..config.concurrency.min(config.count)).map(|_| {
        let (clients, addrs) = (clients.clone(), addrs.to_vec());
        let (config, bar, dispatcher) = (config.clone(), bar.clone(), dispatcher.clone());
        let (next, done, prefix) = (next.clone(), done.clone(), prefix.clone());
        tokio::spawn(async move {
            let mut records = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= config.count {
                    return anyhow::Ok(records);
                }
                let id = format!("{prefix}-{index}");
                let d = dispatcher.acquire();
                let mut r = prove_one(clients[d].clone(), &addrs[d], &config, index, id).await;
                dispatcher.release(d);
                if let (true, Some(dir)) = (r.completed(), &config.save_proofs) {
                    save(dir, &mut r)?;
                }
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if config.print_lines {
                    let line = proof_line(n, config.count, &r, show_daemon);
                    bar.suspend(|| println!("{line}"));
                }
                bar.inc(1);
                records.push(r);
            }
        })
    });
    let mut records = Vec::new();
    for handle in workers.collect::<Vec<_>>() {
        records.extend(handle.await.context("a batch task panicked")??);
    }
    let wall = start.elapsed();
    bar.finish_and_clear();
    records.sort_by_key(|r| r.index);
    if config.verify {
        records = verify_records(config, records).await?;
    }
    Ok(report(
        config,
        addrs,
        fleet_label,
        records,
        wall,
        &dispatcher.peaks(),
    ))
}

/// The fleet's report and each daemon's, from the same records.
fn report(
    config: &BatchConfig,
    addrs: &[DaemonAddr],
    fleet_label: String,
    records: Vec<ProofRecord>,
    wall: Duration,
    peaks: &[usize],
) -> FleetReport {
    let proof_type = config.input.proof_type.name();
    let daemons = addrs
        .iter()
        .zip(peaks)
        .map(|(addr, &peak)| {
            let label = addr.to_string();
            let own: Vec<ProofRecord> = records
                .iter()
                .filter(|r| r.daemon == label)
                .cloned()
                .collect();
            summarize(proof_type, label, peak, own, wall, config.verify)
        })
        .collect();
    let fleet = summarize(
        proof_type,
        fleet_label,
        config.concurrency,
        records,
        wall,
        config.verify,
    );
    FleetReport { fleet, daemons }
}

/// Runs the batch against `config.addr` alone (a fleet of one): connects (failing fast if the daemon is not there),
/// keeps `concurrency` proofs in flight until `count` are done, saving each proof as it
/// arrives (a client killed mid-batch keeps what it received), then verifies.
pub async fn run_batch(config: &BatchConfig) -> Result<BatchReport> {
    let fleet = run_fleet(config, std::slice::from_ref(&config.addr)).await?;
    Ok(fleet.fleet)
}

/// Each daemon's row, then the fleet's summary (`bench batch` with several addresses).
pub fn fleet_summary(f: &FleetReport) -> String {
    let avg = |v: Option<Spread>| v.map_or("-".into(), |v| format!("{:.2}", v.avg));
    let rows: Vec<[String; 7]> = f
        .daemons
        .iter()
        .map(|d| {
            [
                d.addr.clone(),
                d.count.to_string(),
                format!("{}/{}", d.completed, d.count),
                d.concurrency.to_string(),
                format!("{:.2}", d.proofs_per_min),
                avg(d.total_s),
                avg(d.gpu_s),
            ]
        })
        .collect();
    let addr_w = first_column_width(rows.iter().map(|r| r[0].as_str()));
    let mut out = format!(
        "{:<addr_w$}  {:>5}  {:>9}  {:>11}  {:>10}  {:>14}  {:>12}\n",
        "daemon", "sent", "done", "most at once", "proofs/min", "avg total (s)", "avg gpu (s)"
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "{:<addr_w$}  {:>5}  {:>9}  {:>11}  {:>10}  {:>14}  {:>12}",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6]
        );
    }
    let _ = writeln!(out, "fleet of {}:", f.daemons.len());
    out.push_str(&summary(&f.fleet));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_go_to_the_least_loaded_daemon_ties_in_turn() {
        let d = Dispatcher::new(3);
        assert_eq!([d.acquire(), d.acquire(), d.acquire()], [0, 1, 2]);
        d.release(1);
        assert_eq!(d.acquire(), 1, "the only daemon with room");
        // All at one outstanding: the turn goes on after the last pick.
        assert_eq!(d.acquire(), 2);
        assert_eq!(d.acquire(), 0);
        d.release(0);
        d.release(0);
        assert_eq!(d.acquire(), 0);
        assert_eq!(d.peaks(), vec![2, 1, 2]);
        let one = Dispatcher::new(1);
        assert_eq!([one.acquire(), one.acquire()], [0, 0]);
        assert_eq!(one.peaks(), vec![2]);
    }
}
