//! PoRep C2: the C1 output (vanilla proofs) becomes one StackedDrg circuit per partition.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use anyhow::{bail, ensure, Context, Result};
use base64::Engine as _;
use blstrs::Scalar;
use filecoin_hashers::Domain;
use filecoin_proofs::{
    as_safe_commitment, parameters::public_params, DefaultPieceDomain, DefaultPieceHasher,
    MerkleTreeTrait, PoRepConfig,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, Challenges, StackedCircuit, StackedCompound, StackedDrg,
};
use zkforge_groth16::exec::pool;
use zkforge_groth16::r1cs::record_repeated;
use zkforge_groth16::{Assignment, ConstraintMatrices, ScalarPool, Witness};

use crate::native::{self, ChallengeSource, CircuitShape, PartitionValues, PoRepLayout};
use crate::registered_proof::{check_seal_proof_supported, params_id};
use crate::shape::{with_proof_tree, with_tree};
use crate::untrusted::refusing_panics;
use crate::{ParamsId, PartitionedCircuit, ProofKind};

/// The wrapper Curio and lotus-bench put around the C1 output (`c1.json`). Phase1Out is
/// borrowed from the input: the base64 text of a 32 GiB C1 is tens of MB.
#[derive(Deserialize)]
struct C1Wrapper<'a> {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out", borrow)]
    phase1_out: Cow<'a, str>,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// Parses a C1 output: Curio's `{"SectorNum","Phase1Out","SectorSize"}` wrapper (Phase1Out
/// being base64 of the JSON) or the raw JSON of filecoin-proofs-api's `SealCommitPhase1Output`.
/// The format is told by a first pass that keeps nothing ([`is_wrapper`]); the document is
/// then deserialized straight into its type. (A `serde_json::Value` of the whole C1 first took
/// about 9 times the text's size for its arrays of numbers.)
pub fn parse_c1(bytes: &[u8]) -> Result<SealCommitPhase1Output> {
    parse_c1_with_sector(bytes).map(|(out, _)| out)
}

/// [`parse_c1`], with the sector number when the input says it (the wrapper's `SectorNum`; the
/// raw output does not carry one).
pub fn parse_c1_with_sector(bytes: &[u8]) -> Result<(SealCommitPhase1Output, Option<u64>)> {
    if is_wrapper(bytes).context("C1 input is not valid JSON")? {
        let w: C1Wrapper<'_> = serde_json::from_slice(bytes)
            .context("C1 wrapper JSON needs SectorNum, Phase1Out (base64) and SectorSize")?;
        let inner = base64::engine::general_purpose::STANDARD
            .decode(w.phase1_out.trim())
            .context("Phase1Out is not valid base64")?;
        let out: SealCommitPhase1Output = serde_json::from_slice(&inner)
            .context("Phase1Out does not decode to a SealCommitPhase1Output")?;
        let declared = u64::from(out.registered_proof.sector_size());
        ensure!(
            declared == w.sector_size,
            "SectorSize {} does not match the C1 output's registered proof {:?} ({} bytes)",
            w.sector_size,
            out.registered_proof,
            declared
        );
        return Ok((out, Some(w.sector_num)));
    }
    let out = serde_json::from_slice(bytes)
        .context("JSON is neither a C1 wrapper nor a SealCommitPhase1Output")?;
    Ok((out, None))
}

/// Whether `bytes` is a JSON document whose top level is an object with a `Phase1Out` key (the
/// Curio wrapper). The document is read through and nothing is kept ([`Skip`]); what
/// `serde_json::Value` would refuse (syntax, nesting deeper than 128, numbers out of range) is
/// refused here, with serde_json's words.
fn is_wrapper(bytes: &[u8]) -> serde_json::Result<bool> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let found = serde::Deserializer::deserialize_any(&mut json, TopLevel)?;
    json.end()?;
    Ok(found)
}

/// What the two visitors below share: their `Value`, what they expect (serde's error messages
/// name it), and every JSON scalar (bool, number, string, null) dropped and answered with
/// `$answer`. They differ in how they walk objects and arrays.
macro_rules! skimming_visitor {
    ($value:ty, $answer:expr, $expecting:literal) => {
        type Value = $value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str($expecting)
        }

        fn visit_bool<E>(self, _: bool) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_i64<E>(self, _: i64) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_u64<E>(self, _: u64) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_f64<E>(self, _: f64) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_str<E>(self, _: &str) -> Result<$value, E> {
            Ok($answer)
        }

        fn visit_unit<E>(self) -> Result<$value, E> {
            Ok($answer)
        }
    };
}

/// The top level of a C1 document: true for an object with a `Phase1Out` key, false for any
/// other value (which the raw parse then refuses by name).
struct TopLevel;

impl<'de> Visitor<'de> for TopLevel {
    skimming_visitor!(bool, false, "a JSON document");

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(IsPhase1Out(is)) = map.next_key()? {
            found |= is;
            map.next_value::<Skip>()?;
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        SkipVisitor.visit_seq(seq).map(|_| false)
    }
}

/// Any JSON value, read and dropped. Not `IgnoredAny`: serde_json skips that without its
/// nesting limit, while this goes through `deserialize_any` like `serde_json::Value`, so the
/// same documents are refused, with the same errors. Strings are not kept (escaped ones pass
/// through serde_json's one reused scratch buffer).
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    skimming_visitor!(Skip, Skip, "any JSON value");

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// A key of the top-level object, compared with `Phase1Out` without being kept (escaped keys
/// arrive unescaped in `visit_str`).
struct IsPhase1Out(bool);

impl<'de> Deserialize<'de> for IsPhase1Out {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Key;
        impl Visitor<'_> for Key {
            type Value = IsPhase1Out;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_str<E>(self, key: &str) -> Result<IsPhase1Out, E> {
                Ok(IsPhase1Out(key == "Phase1Out"))
            }
        }
        d.deserialize_str(Key)
    }
}

/// Builds the partition circuits of a C1 output.
pub fn porep_circuits(c1: SealCommitPhase1Output) -> Result<Box<dyn PartitionedCircuit>> {
    let size = u64::from(c1.registered_proof.sector_size());
    refusing_panics("the C1 output's vanilla proofs", || {
        with_tree!(size, porep_for_tree, c1)
    })
}

/// A PoRep request whose partitions also have a native assignment (see
/// [`PoRepCircuits::assignment`]), for any sector size.
pub trait NativePoRep: Send + Sync {
    /// The same request as the engine's unit list.
    fn circuits(&self) -> &dyn PartitionedCircuit;
    /// The inputs and aux of partition `k`, as `circuits().synthesize(k)` has them.
    fn assignment(&self, k: usize, threads: usize) -> Result<Assignment>;
    /// How many values partition `k` allocates, part by part.
    fn layout(&self, k: usize) -> Result<PoRepLayout>;
}

/// Builds the partition circuits of a C1 output with their native assignments.
pub fn porep_native(c1: SealCommitPhase1Output) -> Result<Box<dyn NativePoRep>> {
    let size = u64::from(c1.registered_proof.sector_size());
    with_tree!(size, native_for_tree, c1)
}

fn native_for_tree<Tree: 'static + MerkleTreeTrait>(
    c1: SealCommitPhase1Output,
) -> Result<Box<dyn NativePoRep>> {
    Ok(Box::new(PoRepCircuits::<Tree>::new(c1)?))
}

/// The parameter set of a registered PoRep proof.
pub fn porep_params_id(proof: RegisteredSealProof) -> Result<ParamsId> {
    with_proof_tree!(proof, params_id_for_tree)
}

pub(crate) fn params_id_for_tree<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<ParamsId> {
    let id = config.get_cache_identifier::<Tree>()?;
    Ok(params_id(
        ProofKind::PoRep,
        u64::from(config.sector_size),
        &id,
    ))
}

/// The recorded constraints of a registered PoRep proof's circuit.
pub fn porep_matrices(proof: RegisteredSealProof) -> Result<ConstraintMatrices> {
    with_proof_tree!(proof, matrices_for_tree)
}

fn matrices_for_tree<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<ConstraintMatrices> {
    blank_matrices::<Tree>(&public_params::<Tree>(config)?)
}

/// The blank circuit is a prefix and identical challenges: recorded from one challenge
/// ([`record_repeated`]; 95–109 s through the gadgets at 32 GiB).
fn blank_matrices<Tree: 'static + MerkleTreeTrait>(
    pp: &stacked::PublicParams<Tree>,
) -> Result<ConstraintMatrices> {
    let with_challenges = |k| {
        let mut fewer = pp.clone();
        fewer.challenges = match &pp.challenges {
            Challenges::Interactive(_) => Challenges::new_interactive(k),
            Challenges::Synth(_) => Challenges::new_synthetic(k),
            Challenges::Ni(_) => Challenges::new_non_interactive(k),
        };
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&fewer)
    };
    Ok(record_repeated(
        with_challenges,
        pp.challenges.num_challenges_per_partition(),
    )?)
}

type PublicInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as filecoin_hashers::Hasher>::Domain,
    DefaultPieceDomain,
>;

/// The partition circuits of one C1 output, for the tree shape of its sector size.
pub struct PoRepCircuits<Tree: 'static + MerkleTreeTrait> {
    params_id: ParamsId,
    public_params: stacked::PublicParams<Tree>,
    public_inputs: PublicInputs<Tree>,
    vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    _tree: PhantomData<Tree>,
}

fn porep_for_tree<Tree: 'static + MerkleTreeTrait>(
    c1: SealCommitPhase1Output,
) -> Result<Box<dyn PartitionedCircuit>> {
    Ok(Box::new(PoRepCircuits::<Tree>::new(c1)?))
}

impl<Tree: 'static + MerkleTreeTrait> PoRepCircuits<Tree> {
    /// Checks the C1 output and prepares the public parameters and inputs.
    pub fn new(c1: SealCommitPhase1Output) -> Result<Self> {
        let SealCommitPhase1Output {
            registered_proof,
            vanilla_proofs,
            comm_r,
            comm_d,
            replica_id,
            seed,
            ..
        } = c1;
        check_seal_proof_supported(registered_proof)?;
        ensure!(comm_d != [0; 32], "C1 output has an all-zero comm_d");
        ensure!(comm_r != [0; 32], "C1 output has an all-zero comm_r");
        ensure!(seed != [0; 32], "C1 output has an all-zero seed");
        let config = registered_proof.as_v1_config();
        let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> = vanilla_proofs
            .try_into()
            .context("the vanilla proofs do not match the registered proof's sector size")?;
        let partitions = usize::from(config.partitions);
        if vanilla.len() != partitions || vanilla.iter().any(|p| p.is_empty()) {
            bail!(
            "C1 output holds {} partitions of vanilla proofs, {:?} needs {partitions} non-empty ones",
            vanilla.len(),
            registered_proof
        );
        }
        let replica_id: Scalar = replica_id.into();
        let public_inputs = stacked::PublicInputs {
            replica_id: replica_id.into(),
            tau: Some(stacked::Tau {
                comm_d: DefaultPieceDomain::try_from_bytes(&comm_d).context("comm_d")?,
                comm_r: as_safe_commitment(&comm_r, "comm_r")?,
            }),
            k: None,
            seed: Some(seed),
        };
        let public_params = public_params::<Tree>(&config)?;
        // Cheap next to proving, and it turns a wrong sector size or a damaged C1 output into a
        // clear error before any synthesis or GPU time is spent.
        let valid =
            <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme>::verify_all_partitions(
                &public_params,
                &public_inputs,
                &vanilla,
            )
            .unwrap_or(false);
        ensure!(
            valid,
            "the C1 vanilla proofs do not verify against its public values for {:?} (wrong sector \
             size or proof type, or a damaged C1 output)",
            registered_proof
        );
        Ok(Self {
            params_id: params_id_for_tree::<Tree>(&config)?,
            public_params,
            public_inputs,
            vanilla,
            _tree: PhantomData,
        })
    }

    fn proofs(&self, k: usize) -> Result<&Vec<stacked::Proof<Tree, DefaultPieceHasher>>> {
        self.vanilla.get(k).with_context(|| {
            format!(
                "partition {k} does not exist: the C1 output has {}",
                self.vanilla.len()
            )
        })
    }

    /// The circuit of partition `k`.
    pub fn circuit(&self, k: usize) -> Result<StackedCircuit<Tree, DefaultPieceHasher>> {
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::circuit(
            &self.public_inputs,
            (),
            self.proofs(k)?,
            &self.public_params,
            Some(k),
        )
        .with_context(|| format!("building the circuit of partition {k}"))
    }

    /// The public and commitment values partition `k`'s circuit allocates first, with the
    /// same consistency checks as `StackedCompound::circuit`.
    fn partition_values(&self, k: usize) -> Result<PartitionValues> {
        let proofs = self.proofs(k)?;
        let first = proofs.first().context("the partition has no challenges")?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        ensure!(
            proofs.iter().all(|p| p.comm_r_last() == comm_r_last),
            "partition {k}: inconsistent comm_r_last across its challenges' proofs"
        );
        ensure!(
            proofs.iter().all(|p| p.comm_c() == comm_c),
            "partition {k}: inconsistent comm_c across its challenges' proofs"
        );
        let tau = self
            .public_inputs
            .tau
            .as_ref()
            .context("the public inputs have no comm_d/comm_r")?;
        Ok(PartitionValues {
            replica_id: self.public_inputs.replica_id.into(),
            comm_d: tau.comm_d.into(),
            comm_r: tau.comm_r.into(),
            comm_r_last: comm_r_last.into(),
            comm_c: comm_c.into(),
        })
    }

    /// The inputs (ONE first) and aux of partition `k`, equal value for value and in the same
    /// order to the witness `synthesize(k)` makes, generated natively with the challenges
    /// spread over `threads` threads; the aux buffer comes from the pool installed on this
    /// thread ([`pool::with_pool`]), if any.
    pub fn assignment(&self, k: usize, threads: usize) -> Result<Assignment> {
        self.assignment_with(k, threads, pool::current_pool())
    }

    /// [`assignment`](Self::assignment) with the aux buffer from `pool`.
    pub fn assignment_with(
        &self,
        k: usize,
        threads: usize,
        pool: Option<std::sync::Arc<ScalarPool>>,
    ) -> Result<Assignment> {
        let values = self.partition_values(k)?;
        let shape = CircuitShape::of(&self.public_params)?;
        let challenges = ChallengeSource::vanilla(self.proofs(k)?, shape);
        native::assignment::<Tree>(&self.params_id, &values, &challenges, threads, pool)
            .with_context(|| format!("native assignment of partition {k}"))
    }
}

impl<Tree: 'static + MerkleTreeTrait> NativePoRep for PoRepCircuits<Tree> {
    fn circuits(&self) -> &dyn PartitionedCircuit {
        self
    }

    fn assignment(&self, k: usize, threads: usize) -> Result<Assignment> {
        PoRepCircuits::assignment(self, k, threads)
    }

    fn layout(&self, k: usize) -> Result<PoRepLayout> {
        let shape = CircuitShape::of(&self.public_params)?;
        let challenges = ChallengeSource::vanilla(self.proofs(k)?, shape);
        native::layout::<Tree>(&self.params_id, &self.partition_values(k)?, &challenges)
    }
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

impl<Tree: 'static + MerkleTreeTrait> PartitionedCircuit for PoRepCircuits<Tree> {
    gadget_circuit_methods!(|k| format!("synthesizing partition {k}"));

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    /// The native assignment (one thread: the engine runs partitions side by side) and the
    /// recorded matrices, which the prover multiplies it by.
    fn assign(&self, k: usize, matrices: Arc<ConstraintMatrices>) -> Result<Witness> {
        Ok(Witness::from_assignment(self.assignment(k, 1)?, matrices)?)
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>> {
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params,
            Some(k),
        )
    }
}
