//! Fuzzed client inputs, starting from a sealed 2 KiB sector's real ones: both C1 formats
//! (Curio's wrapper and the raw `SealCommitPhase1Output` JSON) with bytes and JSON values
//! changed, and PoSt and SnapDeals vanilla proofs (bincode) with bits flipped, lengths rewritten
//! (wrong, huge), bytes cut or appended, entries dropped or repeated, the list resized around
//! its bound, and the partition index drawn from its whole range with the edges (0, 1, the
//! bound and either side of it, u32::MAX, usize::MAX). Every case ends in a named error or in
//! circuits whose vanilla proofs verify; an index or count out of range in the error naming
//! it; never a panic, an allocation sized by a length or index in the input, or a case slower
//! than its limit.

#[path = "../../groth16/tests/support/fuzz.rs"]
mod fuzz;

use std::time::Duration;

use base64::Engine as _;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use zkforge_filecoin::post::{post_circuits, prover_id_from_miner, PostRequest};
use zkforge_filecoin::snap::{snap_circuits, SnapRequest};
use zkforge_filecoin::{porep, PartitionedCircuit, MAX_PARTITIONS_PER_DEADLINE};
use zkforge_fixtures::{self as fixtures, read_base64_list, unhex32, Manifest};

#[global_allocator]
static ALLOC: fuzz::Recording = fuzz::Recording;

/// Largest single allocation a case may make: the real 2 KiB inputs need a few MiB (public
/// parameters, the parsed proofs); a length read from the input would ask for far more.
fn limits() -> fuzz::Limits {
    fuzz::Limits {
        allocation: 64 << 20,
        time: Duration::from_secs(10),
    }
}

/// A change to a byte string.
#[derive(Clone, Debug)]
enum Bytes {
    Truncate(Index),
    FlipBit(Index, u8),
    /// A little-endian u64 (bincode's lengths) written anywhere.
    Word(Index, u64),
    Cut(Index, Index),
    Append(Vec<u8>),
}

fn length() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(1 << 32),
        Just(1 << 40),
        0u64..64,
        any::<u64>(),
    ]
}

fn bytes_change() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        any::<Index>().prop_map(Bytes::Truncate),
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Bytes::FlipBit(i, b)),
        (any::<Index>(), length()).prop_map(|(i, v)| Bytes::Word(i, v)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Bytes::Cut(a, b)),
        prop::collection::vec(any::<u8>(), 1..64).prop_map(Bytes::Append),
    ]
}

fn apply(b: &mut Vec<u8>, change: &Bytes) {
    match change {
        Bytes::Truncate(i) => b.truncate(i.index(b.len() + 1)),
        Bytes::FlipBit(i, bit) if !b.is_empty() => {
            let at = i.index(b.len());
            b[at] ^= 1 << bit;
        }
        Bytes::Word(i, v) if b.len() >= 8 => {
            let at = i.index(b.len() - 7);
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        Bytes::Cut(x, y) if !b.is_empty() => {
            let (x, y) = (x.index(b.len()), y.index(b.len()));
            b.drain(x.min(y)..x.max(y));
        }
        Bytes::Append(extra) => b.extend_from_slice(extra),
        _ => {}
    }
}

/// A change to a JSON document: the node reached by following `path` (an index per level into
/// the object's fields or the array's items) is replaced, removed or repeated.
#[derive(Clone, Debug)]
struct JsonChange {
    path: Vec<Index>,
    depth: usize,
    to: Replacement,
}

#[derive(Clone, Debug)]
enum Replacement {
    Number(u64),
    Negative,
    Float,
    Text(String),
    Null,
    EmptyArray,
    /// The node twice in an array.
    Doubled,
    Remove,
}

fn json_change() -> impl Strategy<Value = JsonChange> {
    let to = prop_oneof![
        length().prop_map(Replacement::Number),
        Just(Replacement::Negative),
        Just(Replacement::Float),
        "[a-z0-9+/=]{0,12}".prop_map(Replacement::Text),
        Just(Replacement::Null),
        Just(Replacement::EmptyArray),
        Just(Replacement::Doubled),
        Just(Replacement::Remove),
    ];
    (prop::collection::vec(any::<Index>(), 8), 0usize..8, to)
        .prop_map(|(path, depth, to)| JsonChange { path, depth, to })
}

fn change_json(v: &mut Value, c: &JsonChange, level: usize) {
    let children = match v {
        Value::Object(m) => m.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    };
    if level == c.depth || children == 0 {
        let old = v.take();
        *v = match &c.to {
            Replacement::Number(n) => Value::from(*n),
            Replacement::Negative => Value::from(-1i64),
            Replacement::Float => Value::from(0.5f64),
            Replacement::Text(s) => Value::from(s.clone()),
            Replacement::Null | Replacement::Remove => Value::Null,
            Replacement::EmptyArray => Value::Array(Vec::new()),
            Replacement::Doubled => Value::Array(vec![old.clone(), old]),
        };
        return;
    }
    let i = c.path[level].index(children);
    match v {
        Value::Object(m) => {
            let key = m.keys().nth(i).cloned().expect("in range");
            if level + 1 == c.depth && matches!(c.to, Replacement::Remove) {
                m.remove(&key);
            } else {
                change_json(m.get_mut(&key).expect("present"), c, level + 1);
            }
        }
        Value::Array(a) => {
            if level + 1 == c.depth && matches!(c.to, Replacement::Remove) {
                a.remove(i);
            } else {
                change_json(&mut a[i], c, level + 1);
            }
        }
        _ => unreachable!("leaves handled above"),
    }
}

/// A fuzzed document: byte changes of the file as sent, or JSON changes of its content.
#[derive(Clone, Debug)]
enum DocChange {
    Bytes(Vec<Bytes>),
    Json(Vec<JsonChange>),
}

fn doc_change() -> impl Strategy<Value = DocChange> {
    prop_oneof![
        prop::collection::vec(bytes_change(), 1..4).prop_map(DocChange::Bytes),
        prop::collection::vec(json_change(), 1..3).prop_map(DocChange::Json),
    ]
}

fn change_doc(original: &[u8], change: &DocChange) -> Vec<u8> {
    match change {
        DocChange::Bytes(list) => {
            let mut b = original.to_vec();
            list.iter().for_each(|c| apply(&mut b, c));
            b
        }
        DocChange::Json(list) => {
            let mut v: Value = serde_json::from_slice(original).unwrap();
            list.iter().for_each(|c| change_json(&mut v, c, 0));
            serde_json::to_vec(&v).unwrap()
        }
    }
}

/// The C1 parser and the checks of the PoRep circuits: accepted means both passed.
fn c1_case(bytes: &[u8]) -> Result<bool, String> {
    let c1 = match porep::parse_c1(bytes) {
        Ok(c1) => c1,
        Err(e) => return refused(e),
    };
    match porep::porep_circuits(c1) {
        Ok(c) if c.partitions() > 0 => built(c),
        Ok(_) => Err("circuits with no partition".into()),
        Err(e) => refused(e),
    }
}

/// Circuits built from a request must also give every partition's public inputs (what the
/// engine's self-check computes after proving) without panicking.
fn built(c: Box<dyn PartitionedCircuit>) -> Result<bool, String> {
    for k in 0..c.partitions() {
        c.public_inputs(k)
            .map_err(|e| format!("accepted, but partition {k}'s public inputs fail: {e:#}"))?;
    }
    Ok(true)
}

/// A refusal must say what is wrong.
fn refused(e: anyhow::Error) -> Result<bool, String> {
    let msg = format!("{e:#}");
    if msg.trim().is_empty() {
        return Err("an error without a message".into());
    }
    Ok(false)
}

fn fixture() -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let m = fixtures::make(2048, dir.path(), 81).unwrap();
    (dir, m)
}

/// One test: the allocation record is process-wide, so the targets run one after another.
#[test]
fn fuzzed_c1_post_and_snap_inputs_end_in_named_errors() {
    let (dir, m) = fixture();
    c1_targets(&dir, &m);
    post_targets(&dir, &m);
    snap_target(&dir, &m);
}

fn c1_targets(dir: &tempfile::TempDir, m: &Manifest) {
    let wrapper = std::fs::read(dir.path().join(&m.c1_wrapper)).unwrap();
    let raw = std::fs::read(dir.path().join(&m.c1_raw)).unwrap();
    assert!(
        c1_case(&wrapper).unwrap() && c1_case(&raw).unwrap(),
        "the originals are good"
    );

    fuzz::run_target("C1 raw JSON", doc_change(), limits(), |c| {
        c1_case(&change_doc(&raw, &c))
    });

    // The wrapper: its own fields, or the C1 JSON inside Phase1Out (base64 again).
    let outer: Value = serde_json::from_slice(&wrapper).unwrap();
    let inner = base64::engine::general_purpose::STANDARD
        .decode(outer["Phase1Out"].as_str().unwrap())
        .unwrap();
    let wrapped = (any::<bool>(), doc_change());
    fuzz::run_target("C1 Curio wrapper", wrapped, limits(), |(inside, c)| {
        let bytes = if inside {
            let mut w = outer.clone();
            let changed = change_doc(&inner, &c);
            w["Phase1Out"] = base64::engine::general_purpose::STANDARD
                .encode(changed)
                .into();
            serde_json::to_vec(&w).unwrap()
        } else {
            change_doc(&wrapper, &c)
        };
        c1_case(&bytes)
    });
}

/// A fuzzed list of vanilla proofs: entries changed, dropped or repeated, or the list resized.
#[derive(Clone, Debug)]
enum ListChange {
    Entry(Index, Vec<Bytes>),
    Drop(Index),
    Repeat(Index),
    Empty,
    /// The list's entries repeated in turn up to this many.
    Resize(usize),
}

fn list_change() -> impl Strategy<Value = ListChange> {
    // The 2 KiB bounds are 1 (WinningPoSt, SnapDeals) and 2 (WindowPoSt): these sizes are
    // 0, 1, each bound and either side of it, and far beyond.
    let sizes = prop_oneof![Just(0usize), Just(1), Just(2), Just(3), Just(1000)];
    prop_oneof![
        6 => (any::<Index>(), prop::collection::vec(bytes_change(), 1..4))
            .prop_map(|(i, c)| ListChange::Entry(i, c)),
        1 => any::<Index>().prop_map(ListChange::Drop),
        1 => any::<Index>().prop_map(ListChange::Repeat),
        1 => Just(ListChange::Empty),
        2 => sizes.prop_map(ListChange::Resize),
    ]
}

/// A partition index from the whole range, with the edges.
fn partition_index() -> impl Strategy<Value = usize> {
    let bound = MAX_PARTITIONS_PER_DEADLINE;
    prop_oneof![
        Just(0usize),
        Just(1),
        Just(bound - 1),
        Just(bound),
        Just(bound + 1),
        Just(u32::MAX as usize),
        Just(usize::MAX),
        0..bound,
        any::<usize>(),
    ]
}

/// What a request out of range must be refused with, checked before anything else: the
/// partition index first, then the vanilla proof count (`None`: in range).
fn out_of_range(window: bool, k: usize, count: usize) -> Option<String> {
    if window && k >= MAX_PARTITIONS_PER_DEADLINE || !window && k != 0 {
        return Some(format!("partition_index {k} is out of range"));
    }
    match (window, count) {
        (_, 0) => Some("no vanilla proofs".into()),
        (true, 3..) => Some(format!("at most 2 sectors, the request has {count}")),
        (false, 2..) => Some(format!(
            "exactly 1 vanilla proof(s) (its sector count), the request has {count}"
        )),
        _ => None,
    }
}

/// A case's result given the refusal its input calls for, if any.
fn judged(
    result: anyhow::Result<Box<dyn PartitionedCircuit>>,
    must_refuse: Option<String>,
) -> Result<bool, String> {
    match (result, must_refuse) {
        (Ok(_), Some(why)) => Err(format!("accepted, though out of range ({why})")),
        (Ok(c), None) => built(c),
        (Err(e), Some(why)) if !format!("{e:#}").contains(&why) => Err(format!(
            "refused with {e:#}, not for being out of range ({why})"
        )),
        (Err(e), _) => refused(e),
    }
}

fn change_list(original: &[Vec<u8>], change: &ListChange) -> Vec<Vec<u8>> {
    let mut list = original.to_vec();
    match change {
        ListChange::Entry(i, changes) => {
            let at = i.index(list.len());
            changes.iter().for_each(|c| apply(&mut list[at], c));
        }
        ListChange::Drop(i) => {
            list.remove(i.index(list.len()));
        }
        ListChange::Repeat(i) => {
            let at = i.index(list.len());
            list.push(list[at].clone());
        }
        ListChange::Empty => list.clear(),
        ListChange::Resize(n) => {
            list = original.iter().cycle().take(*n).cloned().collect();
        }
    }
    list
}

fn post_targets(dir: &tempfile::TempDir, m: &Manifest) {
    for (name, f) in [
        ("WinningPoSt vanilla bincode", m.winning_post().unwrap()),
        ("WindowPoSt vanilla bincode", m.window_post().unwrap()),
    ] {
        let vanilla =
            read_base64_list(&std::fs::read(dir.path().join(&f.vanilla)).unwrap()).unwrap();
        let request = |vanilla_proofs, randomness, partition_index| PostRequest {
            registered_proof: f.registered_proof,
            randomness,
            prover_id: prover_id_from_miner(1000),
            vanilla_proofs,
            partition_index,
            sector_number: None,
        };
        let randomness = unhex32(&f.randomness).unwrap();
        let good = request(vanilla.clone(), randomness, f.partition_index);
        assert!(post_circuits(good).is_ok(), "{name}: the original is good");
        let window = name.starts_with("WindowPoSt");
        let case = (list_change(), any::<u8>(), partition_index());
        fuzz::run_target(name, case, limits(), |(c, r, partition)| {
            let mut rnd = randomness;
            // Mostly the real randomness; now and then a different (or non-canonical) one.
            if r < 16 {
                rnd[31] ^= r << 3;
            }
            let list = change_list(&vanilla, &c);
            let must_refuse = out_of_range(window, partition, list.len());
            judged(post_circuits(request(list, rnd, partition)), must_refuse)
        });
    }
}

fn snap_target(dir: &tempfile::TempDir, m: &Manifest) {
    let f = m.snap().unwrap();
    let vanilla = read_base64_list(&std::fs::read(dir.path().join(&f.vanilla)).unwrap()).unwrap();
    let request = |vanilla_proofs| SnapRequest {
        registered_proof: f.registered_proof,
        vanilla_proofs,
        comm_r_old: unhex32(&f.comm_r_old).unwrap(),
        comm_r_new: unhex32(&f.comm_r_new).unwrap(),
        comm_d_new: unhex32(&f.comm_d_new).unwrap(),
    };
    assert!(
        snap_circuits(request(vanilla.clone())).is_ok(),
        "the original is good"
    );
    fuzz::run_target("SnapDeals vanilla bincode", list_change(), limits(), |c| {
        let list = change_list(&vanilla, &c);
        let must_refuse = (list.len() != 1)
            .then(|| format!("needs 1 partition proofs, the request has {}", list.len()));
        judged(snap_circuits(request(list)), must_refuse)
    });
}
