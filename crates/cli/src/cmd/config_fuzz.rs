//! Fuzzed configuration files: zkforge.example.toml with bytes changed, and documents made of
//! known and unknown tables, keys and values of every TOML type (sizes, addresses, numbers out
//! of range, nested tables). Every case parses and passes [`Config::check`], or is refused
//! with a message; a parsed configuration prints and reads back the same. No panic, no
//! allocation sized by the input, no slow case.

#[path = "../../../groth16/tests/support/fuzz.rs"]
mod fuzz;

use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;

use super::Config;

#[global_allocator]
static ALLOC: fuzz::Recording = fuzz::Recording;

const EXAMPLE: &str = include_str!("../../../../zkforge.example.toml");

const KEYS: &[&str] = &[
    "listen",
    "http_listen",
    "params",
    "backend",
    "shutdown_deadline_secs",
    "tls_cert",
    "tls_key",
    "tls_client_ca",
    "auth_token_file",
    "insecure_remote",
    "allow_clients",
    "preload",
    "synthesis_workers",
    "synthesis_threads",
    "synthesis_nice",
    "prover_workers_per_device",
    "prover_threads",
    "prove_queue_depth",
    "urgent_lanes",
    "pin_buffers_at_load",
    "memory_budget",
    "memory_margin",
    "result_ttl_secs",
    "result_max",
    "verify_proofs",
    "devices",
    "vram_margin",
    "params_residency",
    "staging_pool",
    "msm_window_bits",
    "msm_windows_per_batch",
    "msm_min_chunk",
    "msm_profile",
    "stream_chunk",
];

fn value() -> impl Strategy<Value = String> {
    let text = prop_oneof![
        Just("auto".to_string()),
        Just("cpu".to_string()),
        Just("0.0.0.0:9820".to_string()),
        Just("127.0.0.1:0".to_string()),
        Just("unix:///tmp/zkforge-fuzz.sock".to_string()),
        Just("99999999999999999999TiB".to_string()),
        Just("18446744073709551615TiB".to_string()),
        Just("-1GiB".to_string()),
        Just("0,1,x".to_string()),
        "[0-9]{1,6}(B|KiB|MiB|GiB|TiB|parsecs)?",
        ".{0,16}",
    ];
    prop_oneof![
        text.prop_map(|t| format!("{t:?}")),
        any::<i64>().prop_map(|n| n.to_string()),
        (-3i64..40).prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        Just("[1, \"two\", 3.0]".to_string()),
        Just("{ a = 1 }".to_string()),
        Just("\"\"\"multi\nline\"\"\"".to_string()),
    ]
}

/// A document of tables with key = value lines.
fn document() -> impl Strategy<Value = String> {
    let table = prop_oneof![
        Just("daemon".to_string()),
        Just("engine".to_string()),
        Just("gpu".to_string()),
        "[a-z]{1,8}",
    ];
    let key =
        prop_oneof![4 => prop::sample::select(KEYS).prop_map(str::to_string), 1 => "[a-z_]{1,12}"];
    let line = (key, value()).prop_map(|(k, v)| format!("{k} = {v}\n"));
    prop::collection::vec((table, prop::collection::vec(line, 0..6)), 0..4).prop_map(|tables| {
        tables
            .into_iter()
            .map(|(t, lines)| format!("[{t}]\n{}", lines.concat()))
            .collect()
    })
}

#[derive(Clone, Debug)]
enum Change {
    Truncate(Index),
    FlipBit(Index, u8),
    Cut(Index, Index),
    Insert(Index, String),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        any::<Index>().prop_map(Change::Truncate),
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Change::FlipBit(i, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Change::Cut(a, b)),
        (any::<Index>(), "[\\[\\]=\"a-z0-9 \n#.{}]{0,20}").prop_map(|(i, s)| Change::Insert(i, s)),
    ]
}

fn changed_example(changes: &[Change]) -> Vec<u8> {
    let mut b = EXAMPLE.as_bytes().to_vec();
    for c in changes {
        match c {
            Change::Truncate(i) => b.truncate(i.index(b.len() + 1)),
            Change::FlipBit(i, bit) if !b.is_empty() => {
                let at = i.index(b.len());
                b[at] ^= 1 << bit;
            }
            Change::Cut(x, y) if !b.is_empty() => {
                let (x, y) = (x.index(b.len()), y.index(b.len()));
                b.drain(x.min(y)..x.max(y));
            }
            Change::Insert(i, s) => {
                let at = i.index(b.len() + 1);
                b.splice(at..at, s.bytes());
            }
            _ => {}
        }
    }
    b
}

/// What `zkforge daemon --config` and `config print` do with a file's text.
fn case(bytes: &[u8]) -> Result<bool, String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Ok(false); // Config::load reads UTF-8 text: refused before parsing
    };
    let config: Config = match toml::from_str(text) {
        Ok(c) => c,
        Err(e) if !e.to_string().is_empty() => return Ok(false),
        Err(_) => return Err("a parse error without a message".into()),
    };
    let printed = config.to_toml();
    let again: Config = toml::from_str(&printed).map_err(|e| format!("printed config: {e}"))?;
    if again != config {
        return Err(format!("printing changed the configuration:\n{printed}"));
    }
    match config.check() {
        Ok(()) => Ok(true),
        Err(e) if !format!("{e:#}").is_empty() => Ok(false),
        Err(_) => Err("an error without a message".into()),
    }
}

#[test]
fn fuzzed_config_files_are_read_or_refused_by_name() {
    let limits = || fuzz::Limits {
        allocation: 1 << 20,
        time: Duration::from_secs(1),
    };
    let changes = prop::collection::vec(change(), 1..4);
    fuzz::run_target("zkforge.example.toml, changed", changes, limits(), |c| {
        case(&changed_example(&c))
    });
    fuzz::run_target("generated TOML documents", document(), limits(), |doc| {
        case(doc.as_bytes())
    });
}
