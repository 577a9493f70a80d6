//! The EmptySectorUpdate (SnapDeals) circuit's assignment, generated natively: the values
//! storage-proofs-update 19.1's `EmptySectorUpdateCircuit::synthesize` allocates, in its order,
//! computed from the partition proof and the public inputs without running a gadget.
//!
//! The circuit, in allocation order:
//! - the prefix: `k_and_h_select` (aux, then public input) and its partition and h-select bits,
//!   the partition index packed from its bits, comm_r_old, comm_d_new and comm_r_new (each aux
//!   then public input), phi = Poseidon(comm_d_new, comm_r_old) with the "gen randomness"
//!   constants, comm_c, both tree-R roots, the apex leaves, the partition path's siblings, and
//!   the two comm_r = Poseidon(comm_c, root) checks;
//! - the apex tree: one SHA-256 per inner node, row by row (`apex_por`);
//! - the suffix: the partition path in tree D from the apex root to comm_d_new, then each
//!   challenge digest (its index, Poseidon(comm_r_new, index), the digest's 255 bits);
//! - one part per challenge: the high bits rho depends on, rho, the encoding
//!   leaf_r_new = leaf_r_old + leaf_d_new·rho, the tree-R-old and tree-R-new openings (siblings
//!   first, then the path's picks and hashes), the apex leaf selected by the challenge's bits,
//!   and the tree-D path from the leaf to that apex leaf (SHA-256, most of the circuit).
//!
//! What is allocated depends on the sector size only, never on values, so the apex tree's
//! nodes (row by row) and the challenges are each written by their own thread into their own
//! region of the aux buffer; every region is checked to be filled exactly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::POSEIDON_CONSTANTS_2;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::constants::{hs, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::PublicParams;
use typenum::U2;
use zkforge_groth16::{Assignment, AssignmentWriter, Region, ScalarPool};

use super::gadgets::{push_bits_le, sha256_hash2, sha256_level};
use super::poseidon::poseidon;
use super::snap_paths::{bits_at, check_tree_r, select, tree_r_path};
use super::synthesis_error;

/// Names the part of the circuit an error came from.
fn named(what: &'static str) -> impl Fn(anyhow::Error) -> zkforge_groth16::Error {
    move |e| synthesis_error(what.into(), e)
}

/// One challenge's openings as the circuit takes them from its vanilla proof: leaves and
/// siblings only (the circuit places each node by the challenge's bits, not by the proof's
/// positions).
#[derive(Clone, Debug)]
pub struct SnapChallenge {
    pub leaf_r_old: Scalar,
    /// Per level of tree R (base levels, then sub and top), the level's siblings.
    pub path_r_old: Vec<Vec<Scalar>>,
    pub leaf_d_new: Scalar,
    /// Per level of the binary tree D, its sibling (one a level; checked).
    pub path_d_new: Vec<Vec<Scalar>>,
    /// The new replica's leaf the proof claims; the circuit asserts it equals the encoding.
    pub leaf_r_new: Scalar,
    pub path_r_new: Vec<Vec<Scalar>>,
}

/// What the circuit of partition `k` is given, as plain values.
#[derive(Clone, Debug)]
pub struct SnapPartition {
    pub k: usize,
    /// How many high bits of a challenge rho depends on (the update configuration's `h`).
    pub h: usize,
    pub comm_r_old: Scalar,
    pub comm_d_new: Scalar,
    pub comm_r_new: Scalar,
    pub comm_c: Scalar,
    /// Tree R roots, as the circuit takes them: from the first challenge's openings.
    pub root_r_old: Scalar,
    pub root_r_new: Scalar,
    pub apex_leafs: Vec<Scalar>,
    pub challenges: Vec<SnapChallenge>,
}

/// The circuit's dimensions for one sector size (`PublicParams`, checked consistent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapShape {
    pub sector_nodes: usize,
    pub challenges: usize,
    /// Bits of a challenge (tree D's height).
    pub challenge_bits: usize,
    pub partitions: usize,
    pub partition_bits: usize,
    pub apex_leaves: usize,
    pub apex_bits: usize,
    /// The `h` values the circuit can select between (`h_select` picks one).
    pub hs: [usize; 6],
}

/// Bits of a field element a challenge digest yields challenges from (`Fr::CAPACITY`).
const DIGEST_BITS: usize = 254;

impl SnapShape {
    pub fn of(pp: &PublicParams) -> Result<Self> {
        let s = Self {
            sector_nodes: pp.sector_nodes,
            challenges: pp.challenge_count,
            challenge_bits: pp.challenge_bit_len,
            partitions: pp.partition_count,
            partition_bits: pp.partition_bit_len,
            apex_leaves: pp.apex_leaf_count,
            apex_bits: pp.apex_leaf_bit_len,
            hs: hs(pp.sector_nodes),
        };
        ensure!(
            s.sector_nodes == 1 << s.challenge_bits
                && s.partitions == 1 << s.partition_bits
                && s.apex_leaves == 1 << s.apex_bits
                && s.partition_bits + s.apex_bits < s.challenge_bits
                && s.challenge_bits < 64
                && s.challenges > 0
                && s.hs.iter().all(|&h| h <= s.challenge_bits),
            "inconsistent SnapDeals parameters: {pp:?}"
        );
        Ok(s)
    }

    /// Challenge bits drawn from a digest; the partition's bits complete a challenge.
    fn random_bits(&self) -> usize {
        self.challenge_bits - self.partition_bits
    }

    /// Levels of tree D from a challenged leaf up to its apex leaf.
    fn levels_to_apex(&self) -> usize {
        self.random_bits() - self.apex_bits
    }

    fn per_digest(&self) -> usize {
        DIGEST_BITS / self.random_bits()
    }

    fn digests(&self) -> usize {
        self.challenges.div_ceil(self.per_digest())
    }
}

/// How many values a partition's circuit allocates, part by part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapLayout {
    /// ONE, the public inputs and everything up to the apex tree.
    pub prefix: Region,
    /// One apex-tree node (a SHA-256 of two nodes); `apex_hashes` of them.
    pub apex_hash: Region,
    pub apex_hashes: usize,
    /// The partition path and the challenge digests.
    pub suffix: Region,
    /// Each challenge; `challenges` of them.
    pub challenge: Region,
    pub challenges: usize,
}

impl SnapLayout {
    /// The whole assignment.
    pub fn total(&self) -> Region {
        Region {
            inputs: self.prefix.inputs
                + self.apex_hashes * self.apex_hash.inputs
                + self.suffix.inputs
                + self.challenges * self.challenge.inputs,
            aux: self.prefix.aux
                + self.apex_hashes * self.apex_hash.aux
                + self.suffix.aux
                + self.challenges * self.challenge.aux,
        }
    }
}

impl SnapPartition {
    /// What the circuit asserts about its inputs (it panics where this returns an error), and
    /// the path shapes the counted layout assumes.
    fn check<Tree: MerkleTreeTrait>(&self, s: &SnapShape) -> Result<()> {
        ensure!(
            self.k < s.partitions,
            "partition {} of {}",
            self.k,
            s.partitions
        );
        ensure!(
            self.apex_leafs.len() == s.apex_leaves,
            "{} apex leaves, the circuit has {}",
            self.apex_leafs.len(),
            s.apex_leaves
        );
        ensure!(
            self.challenges.len() == s.challenges,
            "{} challenge proofs, the circuit has {}",
            self.challenges.len(),
            s.challenges
        );
        for (i, c) in self.challenges.iter().enumerate() {
            let what = |tree: &str| format!("challenge {i}'s {tree} path");
            check_tree_r::<Tree>(&c.path_r_old, s.challenge_bits, &what("tree R old"))?;
            check_tree_r::<Tree>(&c.path_r_new, s.challenge_bits, &what("tree R new"))?;
            ensure!(
                c.path_d_new.len() == s.challenge_bits && c.path_d_new.iter().all(|l| l.len() == 1),
                "{} has {} levels, not {} of one sibling",
                what("tree D"),
                c.path_d_new.len(),
                s.challenge_bits
            );
        }
        // Every challenge's tree-D path ends with the partition's path to comm_d_new.
        let first = &self.challenges[0].path_d_new[s.random_bits()..];
        for (i, c) in self.challenges.iter().enumerate().skip(1) {
            ensure!(
                c.path_d_new[s.random_bits()..] == *first,
                "challenge {i}'s tree D path leaves the partition by another path than \
                 challenge 0's"
            );
        }
        Ok(())
    }

    fn partition_path(&self, s: &SnapShape) -> impl Iterator<Item = Scalar> + '_ {
        self.challenges[0].path_d_new[s.random_bits()..]
            .iter()
            .map(|l| l[0])
    }
}

/// `h_select`: one bit, at the position of `h` among the circuit's `hs`.
fn h_select(s: &SnapShape, h: usize) -> Result<u64> {
    let i = s.hs.iter().position(|&x| x == h).with_context(|| {
        format!(
            "h = {h} is not one of the circuit's {:?} for this sector size",
            s.hs
        )
    })?;
    Ok(1 << i)
}

/// Everything before the apex tree. Returns phi.
fn write_prefix(
    w: &mut AssignmentWriter<'_>,
    s: &SnapShape,
    p: &SnapPartition,
    h_select: u64,
) -> Result<Scalar> {
    w.push_input(Scalar::ONE)?;
    let packed = p.k as u64 | (h_select << s.partition_bits);
    let k_and_h_select = Scalar::from(packed);
    w.push(k_and_h_select)?;
    w.push_input(k_and_h_select)?;
    let bit_len = s.partition_bits + s.hs.len();
    w.push_bits(packed, (1 << bit_len) - 1)?;
    // `pack_bits` of the partition bits.
    w.push(Scalar::from(p.k as u64))?;
    for v in [p.comm_r_old, p.comm_d_new, p.comm_r_new] {
        w.push(v)?;
        w.push_input(v)?;
    }
    let gen = &*POSEIDON_CONSTANTS_GEN_RANDOMNESS;
    let phi = poseidon::<U2>(w, &[p.comm_d_new, p.comm_r_old], gen)?;
    for v in [p.comm_c, p.root_r_old, p.root_r_new] {
        w.push(v)?;
    }
    for &leaf in &p.apex_leafs {
        w.push(leaf)?;
    }
    for sibling in p.partition_path(s) {
        w.push(sibling)?;
    }
    // comm_r = H(comm_c, root) for the old and the new replica (enforced equal, not asserted).
    poseidon::<U2>(w, &[p.comm_c, p.root_r_old], &POSEIDON_CONSTANTS_2)?;
    poseidon::<U2>(w, &[p.comm_c, p.root_r_new], &POSEIDON_CONSTANTS_2)?;
    Ok(phi)
}

/// The partition path from the apex root, then the challenge digests. Returns each
/// challenge's node index (its random bits, then the partition's).
fn write_suffix(
    w: &mut AssignmentWriter<'_>,
    s: &SnapShape,
    p: &SnapPartition,
    apex_root: Scalar,
) -> Result<Vec<u64>> {
    let mut cur = apex_root;
    for (i, sibling) in p.partition_path(s).enumerate() {
        cur = sha256_level(w, cur, sibling, (p.k >> i) & 1 == 1)?;
    }
    let gen = &*POSEIDON_CONSTANTS_GEN_RANDOMNESS;
    let (bits, digests) = (s.random_bits(), s.digests());
    let mut challenges = Vec::with_capacity(s.challenges);
    for j in 0..digests {
        let index = Scalar::from((p.k * digests + j) as u64);
        w.push(index)?;
        let digest = poseidon::<U2>(w, &[p.comm_r_new, index], gen)?;
        push_bits_le(w, &digest)?;
        let bytes = digest.to_bytes_le();
        let take = s.per_digest().min(s.challenges - challenges.len());
        for c in 0..take {
            challenges.push(bits_at(&bytes, c * bits, bits) | ((p.k as u64) << bits));
        }
    }
    Ok(challenges)
}

/// What every challenge reads from the prefix and suffix.
struct Shared<'a> {
    shape: SnapShape,
    h_select: u64,
    phi: Scalar,
    apex_leafs: &'a [Scalar],
}

/// One challenge, `c` its node index.
fn write_challenge<Tree: MerkleTreeTrait>(
    w: &mut AssignmentWriter<'_>,
    sh: &Shared<'_>,
    c: u64,
    ch: &SnapChallenge,
) -> Result<()> {
    let s = &sh.shape;
    // `get_challenge_high_bits`: each h's high bits, kept or zeroed by h_select, their sum.
    let mut selected = Scalar::ZERO;
    for (i, &h) in s.hs.iter().enumerate() {
        let high = Scalar::from(c >> (s.challenge_bits - h));
        let kept = if (sh.h_select >> i) & 1 == 1 {
            high
        } else {
            Scalar::ZERO
        };
        w.push(high)?;
        w.push(kept)?;
        selected += kept;
    }
    w.push(selected)?;
    let rho = poseidon::<U2>(w, &[sh.phi, selected], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;

    // `label_r_new`: the encoding of the new data into the old replica's node.
    w.push(ch.leaf_r_old)?;
    w.push(ch.leaf_d_new)?;
    let scaled = ch.leaf_d_new * rho;
    w.push(scaled)?;
    let leaf_r_new = ch.leaf_r_old + scaled;
    w.push(leaf_r_new)?;
    ensure!(
        leaf_r_new == ch.leaf_r_new,
        "the new replica's leaf is not leaf_r_old + leaf_d_new * rho"
    );

    for (path, leaf) in [
        (&ch.path_r_old, ch.leaf_r_old),
        (&ch.path_r_new, leaf_r_new),
    ] {
        for &sibling in path.iter().flatten() {
            w.push(sibling)?;
        }
        tree_r_path::<Tree>(w, leaf, path, c)?;
    }

    let levels = s.levels_to_apex();
    select(w, sh.apex_leafs, c >> levels, s.apex_bits)?;
    let path = &ch.path_d_new[..levels];
    for level in path {
        w.push(level[0])?;
    }
    let mut cur = ch.leaf_d_new;
    for (i, level) in path.iter().enumerate() {
        cur = sha256_level(w, cur, level[0], (c >> i) & 1 == 1)?;
    }
    Ok(())
}

/// Layouts per sector size, learned from the first partition seen.
fn layouts() -> &'static Mutex<HashMap<usize, SnapLayout>> {
    static LAYOUTS: OnceLock<Mutex<HashMap<usize, SnapLayout>>> = OnceLock::new();
    LAYOUTS.get_or_init(Default::default)
}

/// The layout of `p`'s circuit: cached per sector size, otherwise counted by running each
/// part once without keeping values (one apex node, one challenge). `p` must be checked.
fn layout<Tree: MerkleTreeTrait>(
    s: &SnapShape,
    p: &SnapPartition,
    hsel: u64,
) -> Result<SnapLayout> {
    let cached = layouts()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&s.sector_nodes)
        .copied();
    if let Some(layout) = cached {
        return Ok(layout);
    }
    let (phi, prefix) =
        Assignment::count(|w| write_prefix(w, s, p, hsel).map_err(named("the prefix")))?;
    let ((), apex_hash) = Assignment::count(|w| {
        sha256_hash2(w, Scalar::ZERO, Scalar::ZERO)?;
        Ok(())
    })?;
    let (challenges, suffix) =
        Assignment::count(|w| write_suffix(w, s, p, Scalar::ZERO).map_err(named("the suffix")))?;
    let shared = Shared {
        shape: *s,
        h_select: hsel,
        phi,
        apex_leafs: &p.apex_leafs,
    };
    let ((), challenge) = Assignment::count(|w| {
        write_challenge::<Tree>(w, &shared, challenges[0], &p.challenges[0])
            .map_err(named("challenge 0"))
    })?;
    let layout = SnapLayout {
        prefix,
        apex_hash,
        apex_hashes: s.apex_leaves - 1,
        suffix,
        challenge,
        challenges: s.challenges,
    };
    layouts()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(s.sector_nodes, layout);
    Ok(layout)
}

/// The layout of partition `p`'s circuit for the sector size of `pp`.
pub fn snap_layout<Tree: MerkleTreeTrait>(
    pp: &PublicParams,
    p: &SnapPartition,
) -> Result<SnapLayout> {
    let s = SnapShape::of(pp)?;
    p.check::<Tree>(&s)?;
    layout::<Tree>(&s, p, h_select(&s, p.h)?)
}

/// The assignment (ONE first) of partition `p`'s EmptySectorUpdate circuit, its aux buffer
/// from `pool`, the apex tree's rows and the challenges each spread over up to `threads`
/// threads.
pub fn snap_assignment<Tree: MerkleTreeTrait>(
    pp: &PublicParams,
    p: &SnapPartition,
    threads: usize,
    pool: Option<Arc<ScalarPool>>,
) -> Result<Assignment> {
    let s = SnapShape::of(pp)?;
    p.check::<Tree>(&s)?;
    let hsel = h_select(&s, p.h)?;
    let layout = layout::<Tree>(&s, p, hsel)?;
    let total = layout.total();
    let mut a = Assignment::with_capacity(pool, total.inputs, total.aux);

    let (phi, prefix) = a.append(|w| write_prefix(w, &s, p, hsel).map_err(named("the prefix")))?;
    ensure!(
        prefix == layout.prefix,
        "the prefix allocated {prefix:?}, the layout says {:?}",
        layout.prefix
    );

    // The apex tree, a row at a time: each node is the hash of two nodes of the row below.
    let mut row = p.apex_leafs.clone();
    while row.len() > 1 {
        let nodes: Vec<OnceLock<Scalar>> = (0..row.len() / 2).map(|_| OnceLock::new()).collect();
        a.append_regions(&vec![layout.apex_hash; nodes.len()], threads, |i, w| {
            let node = sha256_hash2(w, row[2 * i], row[2 * i + 1])?;
            nodes[i].get_or_init(|| node);
            Ok(())
        })?;
        row = nodes
            .into_iter()
            .map(|n| n.into_inner().context("an apex node was not written"))
            .collect::<Result<_>>()?;
    }

    let (challenges, suffix) =
        a.append(|w| write_suffix(w, &s, p, row[0]).map_err(named("the suffix")))?;
    ensure!(
        suffix == layout.suffix,
        "the suffix allocated {suffix:?}, the layout says {:?}",
        layout.suffix
    );

    let shared = Shared {
        shape: s,
        h_select: hsel,
        phi,
        apex_leafs: &p.apex_leafs,
    };
    a.append_regions(
        &vec![layout.challenge; layout.challenges],
        threads,
        |i, w| {
            write_challenge::<Tree>(w, &shared, challenges[i], &p.challenges[i])
                .map_err(|e| synthesis_error(format!("challenge {i}"), e))
        },
    )?;
    ensure!(
        a.inputs.len() == total.inputs && a.aux.len() == total.aux,
        "the partition allocated {} inputs and {} aux values, its layout {total:?}",
        a.inputs.len(),
        a.aux.len()
    );
    Ok(a)
}
