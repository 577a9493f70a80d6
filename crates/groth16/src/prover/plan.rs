//! Where a partition's a, b, c are computed, and what one partition of a key holds on the host
//! and on a device: read by the engine's memory budget and by a GPU's VRAM budget alike.

use std::mem::size_of;

use blstrs::Scalar;

use super::ProverBackend;
use crate::QueryLengths;

/// Where a, b, c (A·z, B·z, C·z per constraint) of a partition are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvaluationSite {
    /// At every `enforce` of the reference synthesis: the circuit has no recorded matrices.
    Synthesis,
    /// From the recorded matrices on the CPU, before the backend is called.
    Host,
    /// From the recorded matrices on the backend's device, so only the assignment is uploaded.
    Device,
}

impl EvaluationSite {
    /// The one place this is decided: a circuit with recorded matrices leaves its evaluations
    /// to a backend that computes them on its device, else to the CPU.
    pub fn choose(recorded: bool, backend: &dyn ProverBackend) -> Self {
        match (recorded, backend.evaluates_constraints()) {
            (false, _) => Self::Synthesis,
            (true, false) => Self::Host,
            (true, true) => Self::Device,
        }
    }
}

/// One partition of a key as the prover will hold it. The key's lengths give the shape:
/// domain = |h| + 1, inputs = |ic|, aux = |l|.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionPlan {
    pub site: EvaluationSite,
    /// Constraints rounded up to the NTT domain: the length of a, b, c.
    pub domain: usize,
    pub inputs: usize,
    pub aux: usize,
    /// Aux variables the A query touches (|a| − |ic|).
    pub a_aux: usize,
    /// Aux variables the B queries touch, at most: the lengths do not tell how many of the
    /// B points belong to inputs, so all |b_g1| count.
    pub b_aux: usize,
}

impl PartitionPlan {
    pub fn new(lengths: &QueryLengths, site: EvaluationSite) -> Self {
        Self {
            site,
            domain: lengths.h + 1,
            inputs: lengths.ic,
            aux: lengths.l,
            a_aux: lengths.a.saturating_sub(lengths.ic),
            b_aux: lengths.b_g1,
        }
    }

    /// Host bytes one partition holds from synthesis until it is proved: its pooled buffers
    /// (exactly these capacities: the pool lends no larger one), the public inputs and the
    /// density bitmaps.
    pub fn host_bytes(&self) -> u64 {
        let pooled: usize = self.pooled_buffers().iter().map(|(n, cap)| n * cap).sum();
        ((pooled + self.inputs) * size_of::<Scalar>() + (2 * self.aux + self.inputs) / 8) as u64
    }

    /// Buffers one partition draws from the witness pool, as (count, capacity in scalars):
    /// a, b, c at the domain's length unless the device computes them, and aux.
    pub fn pooled_buffers(&self) -> [(usize, usize); 2] {
        let abc = match self.site {
            EvaluationSite::Device => 0,
            EvaluationSite::Synthesis | EvaluationSite::Host => 3,
        };
        [(abc, self.domain), (1, self.aux)]
    }

    /// Scalars one partition puts in device memory: a, b, c over the domain (uploaded, or
    /// computed there), the aux assignment and its two compactions by density.
    pub fn device_scalars(&self) -> usize {
        3 * self.domain + self.aux + self.a_aux + self.b_aux
    }
}
