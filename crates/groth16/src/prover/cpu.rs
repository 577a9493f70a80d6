//! The CPU backend: rayon-parallel NTTs and blst's Pippenger, on a thread pool of its own.

use std::sync::Arc;

use rayon::ThreadPool;

use super::{Dispatch, ProverBackend, QuerySums};
use crate::msm::{msm, msm_with_density, G1, G2};
use crate::poly::h_coefficients;
use std::mem::take;

use crate::{Error, FailureKind, KeyRef, ProveReport, ProvingKey, Result, Witness};

/// Proves on the CPU. With no pool given it runs on the caller's rayon pool.
#[derive(Clone, Default)]
pub struct CpuBackend {
    pool: Option<Arc<ThreadPool>>,
}

impl CpuBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the prover's work on a dedicated pool of `threads` threads, so that it does not
    /// compete with synthesis for the global pool.
    pub fn with_threads(threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cpu-prover-{i}"))
            .build()
            .map_err(|e| Error::Backend {
                backend: "cpu",
                kind: FailureKind::Internal,
                message: e.to_string(),
            })?;
        Ok(Self {
            pool: Some(Arc::new(pool)),
        })
    }

    fn sums(pk: &ProvingKey, mut w: Witness) -> Result<QuerySums> {
        let pooled = w.recycle.0.is_some();
        let [a, b, c] = w.evaluate()?;
        // The h step consumes a, b, c; pooled buffers must go back to their pool whole.
        let (a, b, c) = if pooled {
            (a.clone(), b.clone(), c.clone())
        } else {
            (take(a), take(b), take(c))
        };
        let (inputs, aux) = (&w.inputs[..], &w.aux[..]);
        let t = std::time::Instant::now();
        let h = h_coefficients(a, b, c)?;
        let h_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = std::time::Instant::now();
        let n_in = inputs.len();
        let b_in = w.b_input_density.count();
        let ((h_sum, l), (a, (b_g1, b_g2))) = rayon::join(
            || (msm::<G1>(&pk.h, &h), msm::<G1>(&pk.l, aux)),
            || {
                let a = msm::<G1>(&pk.a[..n_in], inputs)
                    + msm_with_density::<G1>(&pk.a[n_in..], aux, &w.a_aux_density);
                let b_g1 = msm_with_density::<G1>(&pk.b_g1[..b_in], inputs, &w.b_input_density)
                    + msm_with_density::<G1>(&pk.b_g1[b_in..], aux, &w.b_aux_density);
                let b_g2 = msm_with_density::<G2>(&pk.b_g2[..b_in], inputs, &w.b_input_density)
                    + msm_with_density::<G2>(&pk.b_g2[b_in..], aux, &w.b_aux_density);
                (a, (b_g1, b_g2))
            },
        );
        let msm_ms = t.elapsed().as_secs_f64() * 1e3;
        crate::exec::reaper::drop_later((h, w));
        tracing::debug!(h_ms, msm_ms, "cpu query sums");
        Ok(QuerySums {
            h: h_sum,
            l,
            a,
            b_g1,
            b_g2,
        })
    }
}

impl ProverBackend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn query_sums_on(
        &self,
        _on: Dispatch,
        key: KeyRef<'_>,
        witness: Witness,
        _report: &mut ProveReport,
    ) -> Result<QuerySums> {
        let KeyRef::Memory(pk) = key else {
            return Err(Error::Backend {
                backend: "cpu",
                kind: FailureKind::Internal,
                message: "the CPU prover needs the proving key decoded in memory".into(),
            });
        };
        match &self.pool {
            Some(pool) => pool.install(|| Self::sums(pk, witness)),
            None => Self::sums(pk, witness),
        }
    }
}
