//! The `zkforge` binary end to end: help texts and the demo.

mod common;

use common::{run_ok, zkforge};

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["demo", "--help"],
        &["bench", "--help"],
        &["bench", "local", "--help"],
    ] {
        let stdout = run_ok(zkforge().args(args));
        assert!(stdout.contains("Usage"), "{args:?}");
    }
}

/// The shared cache of test parameters (generated once, minutes on 2 cores).
fn cache_dir() -> std::path::PathBuf {
    zkforge_filecoin::params::zkforge_cache_dir()
}

#[test]
fn demo_proves_a_2kib_porep_that_filecoin_proofs_accepts() {
    let out = zkforge()
        .args(["demo", "--cache"])
        .arg(cache_dir())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok (filecoin-proofs)"), "{stdout}");
    // A one-shot command logs only warnings unless asked: no settings, no TIMELINE lines.
    assert!(
        !stderr.contains("INFO") && !stderr.contains("TIMELINE"),
        "{stderr}"
    );
    let proof = stdout
        .lines()
        .find_map(|l| l.strip_prefix("proof       "))
        .unwrap();
    assert_eq!(proof.len(), 384, "192 bytes in hex");
}

#[test]
fn bench_local_reports_a_row_per_size() {
    let cache = tempfile::tempdir().unwrap();
    let out = zkforge()
        .env("ZKFORGE_CACHE", cache.path())
        .env_remove("RUST_LOG")
        .args(["bench", "local", "--log-sizes", "8,9", "--runs", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(rows[0].trim_start().starts_with('8') && rows[1].trim_start().starts_with('9'));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("INFO"));

    // `--log` asks for more: the key generation is logged.
    let out = zkforge()
        .env("ZKFORGE_CACHE", cache.path())
        .env_remove("RUST_LOG")
        .args([
            "bench",
            "local",
            "--log-sizes",
            "8",
            "--runs",
            "1",
            "--log",
            "info",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("INFO"));
}

#[test]
fn bad_arguments_are_refused_with_a_message() {
    let out = zkforge()
        .args(["demo", "--bit-fraction", "1.5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bit-fraction"));
}
