//! Test support (feature `fault-injection`, off in the product): a prover backend that wraps
//! another and fails chosen calls the way a device or driver failure would, so that tests and
//! the device scripts can check that one failed partition fails its own job only and the
//! backend keeps serving.
//!
//! A plan `<phase>:<n>` fails the n-th call (1-based, counted across every worker of the
//! wrapper) of a phase; several faults: `msm:3,ntt:5`. Each `query_sums_on` call passes through
//! the phases `h2d` (the witness upload), `ntt` (the h step) and `msm` in that order, and stops
//! at the first that fails, as the backends' own phases do: a call failed at `ntt` never
//! reaches its `msm`. `zkforge daemon` built with the feature reads the plan from
//! `ZKFORGE_FAULT` ([`from_env`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::{
    DeviceInfo, Dispatch, Error, KeyRef, ProveReport, ProverBackend, QueryLengths, QuerySums,
    Result, ScalarPool, Witness,
};

/// The environment variable a binary built with fault injection reads its plan from.
pub const ENV: &str = "ZKFORGE_FAULT";

/// The phases of one prover call, in the order a call enters them.
const PHASES: [&str; 3] = ["h2d", "ntt", "msm"];

/// The failure a call reports when it is an armed one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("injected fault ({ENV}): {phase} call {call} failed")]
pub struct InjectedFault {
    pub phase: String,
    pub call: u64,
}

struct Armed {
    phase: String,
    call: u64,
    /// Calls of `phase` seen so far.
    seen: AtomicU64,
}

/// Which calls of which phases fail.
pub struct FaultPlan {
    faults: Vec<Armed>,
}

impl FaultPlan {
    /// Parses `phase:n[,phase:n]`; malformed entries are reported and skipped.
    pub fn parse(spec: &str) -> Self {
        let faults = spec
            .split(',')
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
                    seen: AtomicU64::new(0),
                })
            })
            .collect();
        Self { faults }
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Counts a call entering `phase`; an error when it is an armed one.
    fn enter(&self, phase: &str) -> std::result::Result<(), InjectedFault> {
        for fault in self.faults.iter().filter(|f| f.phase == phase) {
            if fault.seen.fetch_add(1, Ordering::SeqCst) + 1 == fault.call {
                tracing::warn!("{ENV}: failing {phase} call {}", fault.call);
                return Err(InjectedFault {
                    phase: phase.to_string(),
                    call: fault.call,
                });
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self
            .faults
            .iter()
            .map(|f| format!("{}:{}", f.phase, f.call))
            .collect();
        list.join(",")
    }
}

/// `inner`, except that the calls `plan` names fail with an [`InjectedFault`].
pub struct FaultyBackend {
    inner: Arc<dyn ProverBackend>,
    plan: FaultPlan,
}

impl FaultyBackend {
    pub fn new(inner: Arc<dyn ProverBackend>, plan: FaultPlan) -> Self {
        tracing::warn!("{ENV} armed: {}", plan.describe());
        Self { inner, plan }
    }
}

/// `backend` wrapped with the plan in `ZKFORGE_FAULT`, or `backend` itself when it is unset or
/// names no valid fault.
pub fn from_env(backend: Arc<dyn ProverBackend>) -> Arc<dyn ProverBackend> {
    let plan = std::env::var(ENV)
        .map(|s| FaultPlan::parse(&s))
        .unwrap_or_else(|_| FaultPlan::parse(""));
    if plan.is_empty() {
        return backend;
    }
    Arc::new(FaultyBackend::new(backend, plan))
}

impl ProverBackend for FaultyBackend {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        self.inner.devices()
    }

    fn locks_devices(&self) -> bool {
        self.inner.locks_devices()
    }

    fn scalar_pool(&self) -> Option<Arc<ScalarPool>> {
        self.inner.scalar_pool()
    }

    fn pinned_memory(&self) -> (u64, u64) {
        self.inner.pinned_memory()
    }

    fn evaluates_constraints(&self) -> bool {
        self.inner.evaluates_constraints()
    }

    fn host_pinner(&self) -> Option<std::sync::Arc<dyn crate::HostPinner>> {
        self.inner.host_pinner()
    }

    fn place(
        &self,
        lengths: &QueryLengths,
        matrices: Option<&crate::MatricesShape>,
    ) -> Result<crate::prover::placement::KeyPlacement> {
        self.inner.place(lengths, matrices)
    }

    fn key_on_device(&self, key: KeyRef<'_>) -> bool {
        self.inner.key_on_device(key)
    }

    fn stage(
        &self,
        key: KeyRef<'_>,
        matrices: Option<&Arc<crate::ConstraintMatrices>>,
    ) -> Result<()> {
        self.inner.stage(key, matrices)
    }

    fn query_sums_on(
        &self,
        on: Dispatch,
        key: KeyRef<'_>,
        witness: Witness,
        report: &mut ProveReport,
    ) -> Result<QuerySums> {
        for phase in PHASES {
            self.plan.enter(phase).map_err(|fault| Error::Backend {
                backend: self.inner.name(),
                // An injected fault stands for a device's.
                kind: crate::FailureKind::Internal,
                message: fault.to_string(),
            })?;
        }
        self.inner.query_sums_on(on, key, witness, report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_bad_entries_are_skipped() {
        let p = FaultPlan::parse("msm:3, ntt:1,bogus,h2d:0,:4,msm:x");
        assert_eq!(p.describe(), "msm:3,ntt:1");
        assert!(FaultPlan::parse("").is_empty());
    }

    #[test]
    fn the_armed_call_fails_once_naming_its_phase() {
        let p = FaultPlan::parse("msm:3");
        assert!(p.enter("msm").is_ok() && p.enter("ntt").is_ok() && p.enter("msm").is_ok());
        let e = p.enter("msm").unwrap_err();
        assert_eq!(
            e.to_string(),
            "injected fault (ZKFORGE_FAULT): msm call 3 failed"
        );
        assert!(p.enter("msm").is_ok());
    }
}
