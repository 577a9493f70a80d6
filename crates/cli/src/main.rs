//! `zkforge`: the command-line front end of the zkforge proving engine.

mod cmd;
mod progress;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// zkforge: a Groth16 proving engine for Filecoin.
#[derive(Parser)]
#[command(name = "zkforge", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// Log filter (tracing's EnvFilter syntax); RUST_LOG overrides it.
    #[arg(long, global = true, default_value = "info")]
    log: String,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make (or reuse) keys for a demo circuit, prove it on the CPU, verify, print timings.
    Demo(cmd::demo::DemoArgs),
    /// Benchmarks that need no daemon.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&cli.log));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();

    let result = match cli.command {
        Command::Demo(args) => cmd::demo::run(args),
        Command::Bench(cmd) => cmd::bench::run(cmd),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
