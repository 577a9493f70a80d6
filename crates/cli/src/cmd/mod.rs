//! One module per subcommand.

pub mod backend;
pub mod bench;
mod bench_engine;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod fixtures;
mod keys;
pub mod params;
pub mod prove;
