//! `zkforge timeline`: the TIMELINE events of a log as numbers, a bottleneck, and an SVG
//! waterfall or HTML page (all the work is in the zkforge-timeline crate).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use zkforge_timeline::{analyze_log, html, svg, SvgOptions};

#[derive(Args)]
pub struct TimelineArgs {
    /// A log holding `TIMELINE {json}` lines (daemon or engine stderr; colours are fine).
    // Not named `log`: that is the global --log filter.
    #[arg(value_name = "LOGFILE")]
    logfile: PathBuf,
    /// Write the waterfall as SVG.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Write a standalone HTML page: the waterfall and the tables.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Width of the drawing in pixels.
    #[arg(long, default_value_t = 1200)]
    width: u32,
}

pub fn run(args: TimelineArgs) -> Result<()> {
    let text = std::fs::read(&args.logfile)
        .with_context(|| format!("reading {}", args.logfile.display()))?;
    let text = String::from_utf8_lossy(&text);
    let a = analyze_log(&text).with_context(|| format!("{}", args.logfile.display()))?;
    for s in &a.parsed.skipped {
        tracing::warn!(
            "{}:{}: skipped: {}",
            args.logfile.display(),
            s.line,
            s.reason
        );
    }
    if a.waterfall.unmatched_ends > 0 {
        tracing::warn!(
            "{} END events had neither a START nor a duration and are not drawn",
            a.waterfall.unmatched_ends
        );
    }
    println!(
        "{}: {} events, {} lanes, {} bars",
        args.logfile.display(),
        a.parsed.events.len(),
        a.waterfall.lanes.len(),
        a.waterfall.bars.len()
    );
    print!("{}", zkforge_timeline::report::text(&a.stats));
    let opts = SvgOptions {
        width: f64::from(args.width.max(400)),
        title: format!("TIMELINE of {}", args.logfile.display()),
    };
    if let Some(path) = &args.svg {
        std::fs::write(path, svg::document(&a.waterfall, &opts))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.html {
        std::fs::write(path, html::page(&a.waterfall, &a.stats, &opts))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
