//! Test-only fault injection at the prover backends' phase boundaries.
//!
//! `ZKFORGE_FAULT=<phase>:<n>` makes the n-th call (1-based, counted in this process across
//! every worker) of a phase fail the way a device or driver failure would, so that tests and
//! the device scripts can check that one failed partition fails its own job only and the
//! backend keeps serving. Several faults: `msm:3,ntt:5`. Phases: `ntt` (the h step) and `msm`
//! on both backends, `h2d` (witness upload) on CUDA. The variable is read once, at the first
//! check; unset (as in production) a check is one atomic load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable that arms faults.
pub const ENV: &str = "ZKFORGE_FAULT";

/// The failure a check reports when its call is the armed one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("injected fault ({ENV}): {phase} call {call} failed")]
pub struct InjectedFault {
    pub phase: String,
    pub call: u64,
}

struct Armed {
    phase: String,
    call: u64,
}

struct Plan {
    faults: Vec<Armed>,
    /// Calls seen so far, per fault (a phase may be armed for several calls).
    seen: Vec<AtomicU64>,
}

static ANY: AtomicBool = AtomicBool::new(true);
static PLAN: OnceLock<Plan> = OnceLock::new();

/// Parses `phase:n[,phase:n]`; malformed entries are reported and skipped.
fn parse(spec: &str) -> Vec<Armed> {
    spec.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .filter_map(|entry| {
            let parsed = entry
                .split_once(':')
                .and_then(|(p, n)| Some((p.trim(), n.trim().parse::<u64>().ok()?)))
                .filter(|(p, n)| !p.is_empty() && *n > 0);
            if parsed.is_none() {
                tracing::error!("{ENV}: ignoring {entry:?} (use phase:n, n from 1)");
            }
            parsed.map(|(phase, call)| Armed {
                phase: phase.to_string(),
                call,
            })
        })
        .collect()
}

fn plan() -> &'static Plan {
    PLAN.get_or_init(|| {
        let faults = std::env::var(ENV).map(|s| parse(&s)).unwrap_or_default();
        if faults.is_empty() {
            ANY.store(false, Ordering::Relaxed);
        } else {
            let list: Vec<String> = faults
                .iter()
                .map(|f| format!("{}:{}", f.phase, f.call))
                .collect();
            tracing::warn!("{ENV} armed: {}", list.join(","));
        }
        Plan {
            seen: faults.iter().map(|_| AtomicU64::new(0)).collect(),
            faults,
        }
    })
}

/// Called by a backend as it enters `phase`; an error when this call is an armed one.
pub fn check(phase: &str) -> Result<(), InjectedFault> {
    if !ANY.load(Ordering::Relaxed) {
        return Ok(());
    }
    let plan = plan();
    for (fault, seen) in plan.faults.iter().zip(&plan.seen) {
        if fault.phase == phase && seen.fetch_add(1, Ordering::SeqCst) + 1 == fault.call {
            tracing::warn!("{ENV}: failing {phase} call {}", fault.call);
            return Err(InjectedFault {
                phase: phase.to_string(),
                call: fault.call,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_entries_are_skipped() {
        let p = parse("msm:3, ntt:1,bogus,h2d:0,:4,msm:x");
        let got: Vec<(&str, u64)> = p.iter().map(|a| (a.phase.as_str(), a.call)).collect();
        assert_eq!(got, [("msm", 3), ("ntt", 1)]);
        assert!(parse("").is_empty());
    }

    #[test]
    fn the_message_names_the_phase_and_call() {
        let e = InjectedFault {
            phase: "msm".into(),
            call: 3,
        };
        assert_eq!(
            e.to_string(),
            "injected fault (ZKFORGE_FAULT): msm call 3 failed"
        );
    }
}
