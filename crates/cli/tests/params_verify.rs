//! `zkforge params verify` on a copy of the generated 2 KiB WinningPoSt set: a test key is
//! reported as one (exit 0); a byte changed in a file the table lists is a MISMATCH naming
//! both digests (exit non-zero); a name the table does not list and a `.params` without its
//! `.vk` are reported, not failed; a set asked for by name that is not there fails.

mod common;

use std::path::Path;
use std::process::Output;

use common::{params_2kib, run_said, zkforge};
use zkforge_filecoin::param_digest::{self, digest_bytes};
use zkforge_filecoin::{registry, ProofKind};

fn verify(dir: &Path, extra: &[&str]) -> (Output, String) {
    run_said(
        zkforge()
            .args(["params", "verify", "--params"])
            .arg(dir)
            .args(extra),
    )
}

#[test]
fn params_verify_tells_test_keys_damage_and_unknown_files_apart() {
    let shared = params_2kib(ProofKind::WinningPost);
    let id = registry::params_id(ProofKind::WinningPost, 2048).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for p in [
        id.params_path(&shared),
        id.vk_path(&shared),
        param_digest::record_path(&id, &shared),
    ] {
        std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
    }
    let params_name = id
        .params_path(d)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    // The generated set: both files test keys, exit 0; the JSON report says the same.
    let json = d.join("report.json");
    let (out, text) = verify(d, &["--json", json.to_str().unwrap()]);
    assert!(out.status.success(), "{text}");
    let rows = |status: &str| text.lines().filter(|l| l.starts_with(status)).count();
    assert_eq!(rows("TEST KEY"), 2, "{text}");
    assert!(text.contains("winning-post-2KiB"), "{text}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["failed"], 0);
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|f| f["status"] == "TEST KEY"), "{report}");
    let params_row = files
        .iter()
        .find(|f| f["name"] == params_name.as_str())
        .unwrap();
    let bytes = std::fs::read(id.params_path(d)).unwrap();
    assert_eq!(params_row["digest"], digest_bytes(&bytes).as_str());
    assert_eq!(params_row["circuit"], "winning-post-2KiB");

    // One byte changed in the middle of the .params: its name is in the table, its bytes are
    // neither the release's nor the test key's.
    let mut damaged = bytes.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x40;
    std::fs::write(id.params_path(d), &damaged).unwrap();
    let (out, text) = verify(d, &["--proof", "winning-post", "--sector-size", "2KiB"]);
    assert!(!out.status.success(), "{text}");
    let published = param_digest::Manifest::published()
        .get(&params_name)
        .unwrap()
        .digest
        .clone();
    assert!(
        text.contains("MISMATCH")
            && text.contains(&format!("expected {published}"))
            && text.contains(&format!("got {}", digest_bytes(&damaged)))
            && text.contains("1 of 2 file(s) failed verification"),
        "{text}"
    );

    // A file the table does not list, alone with no .vk: reported, not failed.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("v99-custom.params"), b"not a key").unwrap();
    let (out, text) = verify(other.path(), &[]);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("NOT IN THE TABLE")
            && text.contains(&digest_bytes(b"not a key"))
            && text.contains("MISSING")
            && text.contains("v99-custom.vk"),
        "{text}"
    );

    // A set asked for by name that is not there.
    let (out, text) = verify(other.path(), &["--proof", "porep", "--sector-size", "2KiB"]);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("MISSING") && text.contains("porep-2KiB"),
        "{text}"
    );
}
