//! Filecoin's SNARK circuits from the official crates, turned into zkforge witnesses one
//! partition at a time, plus the parameter files around them (test inputs are made by the
//! `zkforge-fixtures` crate, outside the product).
//!
//! A client request, typed as a [`ProofRequest`] (a PoRep C1 output, PoSt or SnapDeals vanilla
//! proofs), becomes a [`PartitionedCircuit`]: the unit list the engine schedules. Each
//! partition synthesizes into a [`Witness`] that any prover backend proves against the
//! circuit's `.params`. What a request may carry is bounded by the protocol ([`limits`]) and
//! checked before anything is sized from it.

/// The [`PartitionedCircuit`] methods the circuit sets of the official crates (`porep`, `post`,
/// `snap`) answer alike, from what each of them has: a `params_id` field, `circuit(k)` (the
/// gadgets' circuit of partition `k`), a `public_params` field and its module's
/// `blank_matrices::<Tree>`. `$synthesizing` is the context of a failed reference synthesis
/// of partition `$k`. Defined before the modules that use it.
macro_rules! gadget_circuit_methods {
    (|$k:ident| $synthesizing:expr) => {
        fn params_id(&self) -> &$crate::ParamsId {
            &self.params_id
        }

        fn synthesize(&self, $k: usize) -> anyhow::Result<zkforge_groth16::Witness> {
            let witness = zkforge_groth16::synthesize(self.circuit($k)?);
            anyhow::Context::with_context(witness, || $synthesizing)
        }

        fn record_matrices(&self) -> anyhow::Result<Option<zkforge_groth16::ConstraintMatrices>> {
            blank_matrices::<Tree>(&self.public_params).map(Some)
        }
    };
}

mod base64_list;
mod hex;
pub mod limits;
pub mod native;
pub mod param_digest;
pub mod params;
pub mod porep;
pub mod post;
pub mod post_partition;
pub mod registered_proof;
pub mod registry;
pub mod request;
pub mod shape;
pub mod snap;
mod untrusted;

pub use base64_list::decode_base64_list;
pub use hex::{hex, unhex32};
pub use limits::{max_vanilla_proofs, MAX_PARTITIONS_PER_DEADLINE};
pub use registered_proof::{params_id, RegisteredProof};
pub use request::ProofRequest;
pub use zkforge_circuits::{ParamsId, PartitionedCircuit, ProofKind};
