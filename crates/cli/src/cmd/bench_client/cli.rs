//! The `zkforge bench single|batch|sweep` arguments and their runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::address::DaemonAddr;
use super::batch::{BatchConfig, BatchReport};
use super::fleet::{fleet_summary, run_batch, run_fleet};
use super::input::{InputSpec, ProofInput, ProofType};
use super::report::{self, write_json};
use super::sweep::{run_sweep, Point, SweepConfig};

/// The daemon and what to prove.
#[derive(Args, Clone, Debug)]
pub struct TargetArgs {
    /// Daemon address: host:port, http://host:port, unix:/path/to.sock or unix:///path.
    /// `bench batch` takes several, comma-separated: each proof goes to the daemon with the
    /// fewest of the batch's proofs outstanding.
    #[arg(long, default_value = "127.0.0.1:9820")]
    addr: String,
    /// Proof kind.
    #[arg(long = "type", value_enum)]
    proof_type: ProofType,
    /// C1 output (porep) or JSON array of base64 vanilla proofs (PoSt, snap)
    /// [default: the file in --fixtures].
    #[arg(long)]
    input: Option<PathBuf>,
    /// A `zkforge fixtures` directory: inputs and public values (needed by --verify).
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// PoSt/snap sector size, e.g. 2KiB [default: the fixtures'].
    #[arg(long)]
    sector_size: Option<String>,
    /// PoSt randomness, 64 hex digits [default: the fixtures'].
    #[arg(long)]
    randomness: Option<String>,
    /// PoSt miner actor id (the daemon derives the prover id from it).
    #[arg(long, default_value_t = 1000)]
    miner_id: u64,
    /// WindowPoSt partition [default: the fixtures', else 0].
    #[arg(long)]
    partition_index: Option<u32>,
    #[arg(long)]
    comm_r_old: Option<String>,
    #[arg(long)]
    comm_r_new: Option<String>,
    #[arg(long)]
    comm_d_new: Option<String>,
    /// Parameter directory holding the `.vk` files --verify reads
    /// [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    params: Option<PathBuf>,
    /// Seconds to connect and get a first answer from the daemon.
    #[arg(long, default_value_t = 10)]
    connect_timeout: u64,
    /// Seconds to wait for one proof (0: no limit); late proofs are cancelled and count as failed.
    #[arg(long, default_value_t = 0)]
    proof_timeout: u64,
}

/// Saving, checking and recording results.
#[derive(Args, Clone, Debug)]
pub struct OutputArgs {
    /// Write each proof to DIR/proof-NNNN.bin.
    #[arg(long)]
    save_proofs: Option<PathBuf>,
    /// Check every proof with filecoin-proofs' verifier (needs --fixtures), after the timing.
    #[arg(long)]
    verify: bool,
    /// Write every number (per proof and summary) as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
pub struct SingleArgs {
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
pub struct BatchArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Proofs in the batch.
    #[arg(short = 'c', long, default_value_t = 4)]
    count: usize,
    /// Proofs in flight at once, over all the daemons given.
    #[arg(short = 'j', long, default_value_t = 1)]
    concurrency: usize,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
pub struct SweepArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// COUNTxCONCURRENCY points, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4x1,4x2")]
    points: Vec<Point>,
    /// Daemon configs (comma-separated TOML files): a local daemon is started for each
    /// (on a private unix socket; --addr is then unused) and stopped with SIGTERM after its points.
    #[arg(long, value_delimiter = ',')]
    daemon_config: Vec<PathBuf>,
    /// Keep each started daemon's log (with its TIMELINE, for `zkforge timeline`) in DIR.
    #[arg(long)]
    daemon_logs: Option<PathBuf>,
    /// Seconds a started daemon may take to answer.
    #[arg(long, default_value_t = 120)]
    daemon_start_timeout: u64,
    #[command(flatten)]
    output: OutputArgs,
}

/// The daemons `--addr` names (at least one).
fn addresses(t: &TargetArgs) -> Result<Vec<DaemonAddr>> {
    DaemonAddr::parse_list(&t.addr)
}

/// `--addr` for the commands that drive one daemon.
fn one_address(t: &TargetArgs, command: &str) -> Result<DaemonAddr> {
    match addresses(t)?.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!("{command} drives one daemon; several addresses are for bench batch"),
    }
}

/// The batch to run, against `addr`.
fn batch_config(
    t: &TargetArgs,
    o: &OutputArgs,
    addr: DaemonAddr,
    count: usize,
    concurrency: usize,
) -> Result<BatchConfig> {
    if let Some(dir) = &t.params {
        // filecoin-proofs reads this once, at its first use: before any verification.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let spec = InputSpec {
        proof_type: t.proof_type,
        input: t.input.clone(),
        fixtures: t.fixtures.clone(),
        sector_size: t.sector_size.clone(),
        randomness: t.randomness.clone(),
        miner_id: t.miner_id,
        partition_index: t.partition_index,
        comm_r_old: t.comm_r_old.clone(),
        comm_r_new: t.comm_r_new.clone(),
        comm_d_new: t.comm_d_new.clone(),
    };
    Ok(BatchConfig {
        addr,
        input: Arc::new(ProofInput::load(&spec)?),
        count,
        concurrency,
        connect_timeout: Duration::from_secs(t.connect_timeout.max(1)),
        proof_timeout: (t.proof_timeout > 0).then(|| Duration::from_secs(t.proof_timeout)),
        save_proofs: o.save_proofs.clone(),
        verify: o.verify,
        progress: true,
        print_lines: true,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Failed or rejected proofs make the command fail, after the numbers are out.
fn check(r: &BatchReport) -> Result<()> {
    if r.failed > 0 {
        bail!("{} of {} proofs did not complete", r.failed, r.count);
    }
    if let Some(ok) = r.verified_ok {
        // A verifier that could not run (no `.vk` where it looked) says nothing of the proofs:
        // named as such, not counted as rejections.
        if let Some(why) = r.unchecked().next() {
            bail!(
                "{} of {} proofs could not be checked by filecoin-proofs' verifier \
                 (--params names the directory of its .vk files): {why}",
                r.unchecked().count(),
                r.completed
            );
        }
        if ok < r.completed {
            bail!("filecoin-proofs rejected {} proofs", r.completed - ok);
        }
    }
    Ok(())
}

pub fn run_single(args: SingleArgs) -> Result<()> {
    let addr = one_address(&args.target, "bench single")?;
    let mut config = batch_config(&args.target, &args.output, addr, 1, 1)?;
    config.print_lines = false;
    let report = runtime()?.block_on(run_batch(&config))?;
    print!("{}", report::single(&report.proofs[0]));
    if let Some(path) = &args.output.json {
        write_json(path, &report)?;
    }
    check(&report)
}

pub fn run_batch_command(args: BatchArgs) -> Result<()> {
    let addrs = addresses(&args.target)?;
    let (count, concurrency) = (args.count, args.concurrency);
    let config = batch_config(
        &args.target,
        &args.output,
        addrs[0].clone(),
        count,
        concurrency,
    )?;
    let against = addrs
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "{count} × {} against {against}, {concurrency} in flight",
        config.input.proof_type.name(),
    );
    if let [_] = addrs.as_slice() {
        let report = runtime()?.block_on(run_batch(&config))?;
        print!("{}", report::summary(&report));
        if let Some(path) = &args.output.json {
            write_json(path, &report)?;
        }
        return check(&report);
    }
    let fleet = runtime()?.block_on(run_fleet(&config, &addrs))?;
    print!("{}", fleet_summary(&fleet));
    if let Some(path) = &args.output.json {
        write_json(path, &fleet)?;
    }
    check(&fleet.fleet)
}

pub fn run_sweep_command(args: SweepArgs) -> Result<()> {
    let addr = one_address(&args.target, "bench sweep")?;
    let mut base = batch_config(&args.target, &args.output, addr, 1, 1)?;
    base.print_lines = false;
    if !args.daemon_config.is_empty() && args.target.addr != "127.0.0.1:9820" {
        tracing::warn!("--addr is unused with --daemon-config: each daemon gets a private socket");
    }
    let sweep = SweepConfig {
        base,
        points: args.points,
        daemon_configs: args.daemon_config,
        daemon_exe: std::env::current_exe().context("locating the zkforge binary")?,
        daemon_logs: args.daemon_logs,
        start_timeout: Duration::from_secs(args.daemon_start_timeout),
    };
    let rows = runtime()?.block_on(run_sweep(&sweep))?;
    print!("{}", report::sweep_table(&rows));
    if let Some(path) = &args.output.json {
        write_json(path, &rows)?;
    }
    rows.iter().try_for_each(|r| check(&r.report))
}

#[cfg(test)]
mod tests {
    use super::super::batch::{summarize, ProofRecord};
    use super::*;

    fn completed(index: usize, verified: Option<bool>, verify_error: Option<&str>) -> ProofRecord {
        let mut r = ProofRecord::new(index, format!("r{index}"), "d".into());
        r.status = "COMPLETED".into();
        r.verified = verified;
        r.verify_error = verify_error.map(Into::into);
        r
    }

    fn verified(records: Vec<ProofRecord>) -> BatchReport {
        summarize(
            "porep",
            "d".into(),
            1,
            records,
            Duration::from_secs(1),
            true,
        )
    }

    #[test]
    fn a_verifier_that_could_not_run_is_named_not_counted_as_a_rejection() {
        let missing_key = "No cached parameters found for stacked-proof-of-replication";
        let unchecked = verified(vec![
            completed(0, Some(true), None),
            completed(1, None, Some(missing_key)),
        ]);
        let err = check(&unchecked).unwrap_err().to_string();
        assert!(
            err.starts_with("1 of 2 proofs could not be checked") && err.ends_with(missing_key),
            "{err}"
        );
        assert!(report::summary(&unchecked)
            .contains("verified     1/2 accepted by filecoin-proofs, 1 not checked"));

        let rejected = verified(vec![
            completed(0, Some(true), None),
            completed(1, Some(false), None),
        ]);
        assert_eq!(
            check(&rejected).unwrap_err().to_string(),
            "filecoin-proofs rejected 1 proofs"
        );
        assert!(check(&verified(vec![completed(0, Some(true), None)])).is_ok());
    }
}
