//! `zkforge`: the command-line front end of the zkforge proving engine.

mod cmd;
mod progress;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// The daemon's logs: ours at info (every setting, TIMELINE events), the Filecoin crates'
/// chatter only from warnings up.
const DAEMON_LOG: &str =
    "info,filecoin_proofs=warn,filecoin_proofs_api=warn,storage_proofs_core=warn,\
storage_proofs_porep=warn,storage_proofs_post=warn,storage_proofs_update=warn";

/// One-shot commands (demo, prove, params, fixtures, bench, ...) show a progress bar and a
/// summary; their logs stay quiet unless `--log` or RUST_LOG asks for more.
const ONE_SHOT_LOG: &str = "warn";

/// zkforge: a Groth16 proving engine for Filecoin.
#[derive(Parser)]
#[command(name = "zkforge", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// Log filter (tracing's EnvFilter syntax, e.g. "info" or "zkforge_groth16=debug"); RUST_LOG
    /// overrides it. Default: "warn", and info for `daemon`.
    #[arg(long, global = true)]
    log: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// PoRep C2 of a 2 KiB sector end to end on the CPU (params and fixture made on first run).
    Demo(cmd::demo::DemoArgs),
    /// Prove client inputs and write the proof.
    #[command(subcommand)]
    Prove(cmd::prove::ProveCommand),
    /// Parameter files.
    #[command(subcommand)]
    Params(cmd::params::ParamsCommand),
    /// Client inputs for tests: a small sector sealed offline, or a sparse PoRep C1 at any size.
    Fixtures(cmd::fixtures::FixturesArgs),
    /// Serve the cuzk.v1 ProvingEngine gRPC API (what Curio speaks).
    Daemon(cmd::daemon::DaemonArgs),
    /// The daemon's configuration.
    #[command(subcommand)]
    Config(cmd::config::ConfigCommand),
    /// Benchmarks: in-process (local, engine) and a client of the daemon (single, batch, sweep).
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// What this host will do, before any proof: GPUs, memory, parameters, each set's plan.
    /// Exit 0: something can prove; 2: nothing can (1: the doctor could not run).
    Doctor(cmd::doctor::DoctorArgs),
    /// Analyse the TIMELINE events of a log: lane busy fractions, gaps, bottleneck, waterfall.
    Timeline(cmd::timeline::TimelineArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);

    let ok = |r: anyhow::Result<()>| r.map(|()| std::process::ExitCode::SUCCESS);
    let result = match cli.command {
        // The one command with exit codes of its own (cmd/doctor.rs).
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Demo(args) => ok(cmd::demo::run(args)),
        Command::Prove(cmd) => ok(cmd::prove::run(cmd)),
        Command::Params(cmd) => ok(cmd::params::run(cmd)),
        Command::Fixtures(args) => ok(cmd::fixtures::run(args)),
        Command::Daemon(args) => ok(cmd::daemon::run(args)),
        Command::Config(cmd) => ok(cmd::config::run(cmd)),
        Command::Bench(cmd) => ok(cmd::bench::run(cmd)),
        Command::Timeline(args) => ok(cmd::timeline::run(args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The one place the log level is chosen: RUST_LOG, else `--log`, else the command's default.
fn init_logging(cli: &Cli) {
    let default = match &cli.command {
        // A cuzk file's logging.level stands where --log would: our info, the Filecoin
        // crates' warnings.
        Command::Daemon(args) => match args.cuzk_log_level() {
            Some(level) => DAEMON_LOG.replacen("info", &level, 1),
            None => DAEMON_LOG.to_string(),
        },
        _ => ONE_SHOT_LOG.to_string(),
    };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(cli.log.as_deref().unwrap_or(&default)));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
