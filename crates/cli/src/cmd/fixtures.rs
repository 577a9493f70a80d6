//! `zkforge fixtures`: seal a small sector offline and write the client inputs for tests.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use zkforge_filecoin::{fixtures, shape::parse_sector_size};

#[derive(Args)]
pub struct FixturesArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB (larger ones need hours and terabytes).
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Seed of the sector data, ids and randomness (same seed, same fixtures).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: FixturesArgs) -> anyhow::Result<()> {
    let size = parse_sector_size(&args.sector_size)?;
    let t = Instant::now();
    let m = fixtures::make(size, &args.out, args.seed)?;
    println!(
        "sealed a {} sector in {:.1} s",
        args.sector_size,
        t.elapsed().as_secs_f64()
    );
    println!("  {}", args.out.join(&m.c1_wrapper).display());
    println!("  {}", args.out.join(&m.c1_raw).display());
    println!("  {}", args.out.join(fixtures::MANIFEST).display());
    Ok(())
}
