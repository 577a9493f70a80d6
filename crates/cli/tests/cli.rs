//! The `zkforge` binary end to end: help texts, the demo, fixtures, `prove porep` of the seal
//! proof types besides interactive PoRep.

mod common;

use common::{run_fails_with, run_ok, zkforge};

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["demo", "--help"],
        &["bench", "--help"],
        &["bench", "local", "--help"],
        &["bench", "synthesis", "--help"],
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

#[test]
fn fixtures_above_2kib_are_sparse_and_a_missing_kind_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fx");
    let stdout = run_ok(
        zkforge()
            .args(["fixtures", "--sector-size", "8MiB", "--seed", "3", "--out"])
            .arg(&fx),
    );
    assert!(stdout.contains("made sparse 8MiB fixtures in"), "{stdout}");
    let m = zkforge_fixtures::load(&fx).unwrap();
    assert_eq!(m.sealing, zkforge_fixtures::Sealing::Sparse);
    let snap = m.snap().unwrap().vanilla.clone();
    for file in [
        &m.c1_wrapper,
        &m.c1_raw,
        &m.winning_post().unwrap().vanilla,
        &m.window_post().unwrap().vanilla,
        &snap,
    ] {
        let size = std::fs::metadata(fx.join(file)).unwrap().len();
        assert!(stdout.contains(&format!("{size} bytes")), "{stdout}");
    }

    // Fixtures without a kind: the bench client names it before connecting anywhere.
    let manifest = fx.join(zkforge_fixtures::MANIFEST);
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("snap");
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
    run_fails_with(
        zkforge()
            .args(["bench", "single", "--addr", "127.0.0.1:1", "--type", "snap"])
            .arg("--fixtures")
            .arg(&fx),
        "hold no SnapDeals inputs",
    );

    // --kinds leaves the others out (the C1 is always written).
    let some = dir.path().join("some");
    run_ok(
        zkforge()
            .args([
                "fixtures",
                "--sector-size",
                "8MiB",
                "--kinds",
                "snap",
                "--out",
            ])
            .arg(&some),
    );
    let m = zkforge_fixtures::load(&some).unwrap();
    assert!(m.snap.is_some() && m.winning_post.is_none() && m.window_post.is_none());
    assert!(some.join(&m.c1_raw).exists());

    // Sealing 32 GiB for real is refused, and nothing is written.
    let big = dir.path().join("big");
    run_fails_with(
        zkforge()
            .args([
                "fixtures",
                "--sector-size",
                "32GiB",
                "--seal",
                "full",
                "--out",
            ])
            .arg(&big),
        "cannot seal a 32GiB sector",
    );
    assert!(!big.exists());
}

#[test]
fn bench_synthesis_compares_native_and_reference_on_a_c1() {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fx");
    run_ok(
        zkforge()
            .args([
                "fixtures",
                "--sector-size",
                "2KiB",
                "--seal",
                "sparse",
                "--out",
            ])
            .arg(&fx),
    );
    let m = zkforge_fixtures::load(&fx).unwrap();
    let stdout = run_ok(
        zkforge()
            .args([
                "bench",
                "synthesis",
                "--threads",
                "2",
                "--reference",
                "--c1",
            ])
            .arg(fx.join(&m.c1_raw)),
    );
    assert!(
        stdout.contains("native == reference: inputs and aux equal in all 1 partitions"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("native  ") || l.starts_with("reference  "))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");

    run_fails_with(
        zkforge().args(["bench", "synthesis", "--synthetic", "2KiB", "--reference"]),
        "--reference needs a C1 output",
    );
}

/// Synthetic PoRep (Curio's `UseSyntheticPoRep`) from the command line: `zkforge fixtures
/// --porep-type synthetic` seals through filecoin-proofs' synthetic path, `zkforge prove
/// porep` proves it with the interactive PoRep's parameter set, and verify_seal for the
/// synthetic type accepts the proof. NI-PoRep is refused by name before anything is proved,
/// and sparse fixtures of either type are refused with the reason.
#[test]
fn prove_porep_proves_a_synthetic_sector_and_refuses_ni_porep_by_name() {
    use filecoin_proofs_api::RegisteredSealProof::*;
    let params = cache_dir().join("params");
    // filecoin-proofs' verifier reads the .vk from here.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    zkforge_filecoin::params::ensure_test_params(
        zkforge_filecoin::ProofKind::PoRep,
        2048,
        &params,
        &(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fixtures = |porep_type: &str| {
        let out = dir.path().join(porep_type);
        let stdout = run_ok(
            zkforge()
                .args(["fixtures", "--porep-type", porep_type, "--seed", "53"])
                .arg("--out")
                .arg(&out),
        );
        let m = zkforge_fixtures::load(&out).unwrap();
        assert!(
            stdout.contains(&format!("{:?}", m.registered_seal_proof)),
            "{stdout}"
        );
        (out.join(&m.c1_wrapper), m)
    };
    let prove = |c1: &std::path::Path, out: &std::path::Path| {
        let mut cmd = zkforge();
        cmd.args(["prove", "porep", "--backend", "cpu", "--c1"])
            .arg(c1)
            .arg("--params")
            .arg(&params)
            .arg("--out")
            .arg(out)
            .env_remove("RUST_LOG");
        cmd
    };

    let (c1, m) = fixtures("synthetic");
    assert_eq!(
        m.registered_seal_proof,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep
    );
    let proof_file = dir.path().join("synthetic.proof");
    run_ok(&mut prove(&c1, &proof_file));
    let proof = std::fs::read(&proof_file).unwrap();
    assert_eq!(proof.len(), 192);
    assert!(m.verify_porep(&proof).unwrap(), "verify_seal accepts it");
    let mut bad = proof.clone();
    bad[7] ^= 1;
    assert!(!m.verify_porep(&bad).unwrap_or(false));

    let (c1, m) = fixtures("non-interactive");
    assert_eq!(
        m.registered_seal_proof,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep
    );
    let ni_out = dir.path().join("ni.proof");
    let out = prove(&c1, &ni_out).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for words in [
        "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
        "aggregation is not supported",
    ] {
        assert!(stderr.contains(words), "{stderr}");
    }
    assert!(!ni_out.exists(), "no proof written");

    run_fails_with(
        zkforge()
            .args(["fixtures", "--seal", "sparse", "--porep-type", "synthetic"])
            .arg("--out")
            .arg(dir.path().join("sparse")),
        "draws its challenges from comm_r",
    );
}
