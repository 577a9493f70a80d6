//! One module per subcommand.

pub mod backend;
pub mod bench;
mod bench_engine;
mod bench_pipeline;
mod bench_synthesis;
pub mod config;
mod cuzk_config;
mod cuzk_values;
pub mod daemon;
pub mod demo;
pub mod doctor;
mod doctor_gpu;
mod doctor_params;
pub mod fixtures;
mod keys;
pub mod params;
mod params_guard;
mod params_verify;
mod proof_arg;
pub mod prove;
pub mod timeline;

// bench_client/ is this package's library target (Cargo.toml [lib]), used here through
// `zkforge_bench_client`, so that tests can call it without spawning processes.
