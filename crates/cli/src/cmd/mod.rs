//! One module per subcommand.

pub mod backend;
pub mod bench;
pub mod demo;
pub mod fixtures;
mod keys;
pub mod params;
pub mod prove;
