//! `zkforge doctor` on the CPU (CI has no GPU; the binary under test has no `cuda` feature):
//! it says so, names the CPU backend, the host's memory and budget and every parameter set it
//! finds, and exits 2 when nothing can prove (an empty directory) and 0 when a set can (the
//! 2 KiB WinningPoSt test keys, `--verify` hashing them); a set over the memory budget is
//! refused naming what to change, and one whose file is damaged is named unusable.

mod common;

use std::path::Path;
use std::process::Output;

use common::{params_2kib, run_said, zkforge};
use zkforge_filecoin::param_digest;
use zkforge_filecoin::{registry, ProofKind};

fn doctor(dir: &Path, extra: &[&str]) -> (Output, String) {
    run_said(
        zkforge()
            .args(["doctor", "--params"])
            .arg(dir)
            .args(extra)
            .env_remove("RUST_LOG"),
    )
}

#[test]
fn doctor_without_parameters_says_nothing_can_prove_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let (out, text) = doctor(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    for part in [
        "built without the `cuda` feature",
        "backend\n  cpu",
        "budget the daemon would take",
        "no parameter set",
        "nothing can prove here (exit 2)",
    ] {
        assert!(text.contains(part), "{part:?} missing:\n{text}");
    }
    // backend = "cuda" without a GPU: no backend at all, also exit 2.
    let (out, text) = doctor(dir.path(), &["--backend", "cuda"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("NONE: daemon.backend = \"cuda\""), "{text}");
}

#[test]
fn doctor_names_the_sets_it_finds_and_exits_0_when_one_can_prove() {
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
    std::fs::write(d.join("v27-old-release.params"), b"x").unwrap();

    let (out, text) = doctor(d, &["--backend", "cpu", "--verify"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let set = line_of(&text, "winning-post-2KiB ");
    assert!(
        set.contains("header OK") && set.contains("a test key"),
        "{text}"
    );
    assert!(
        set.contains("equal to its test-key record"),
        "--verify: {text}"
    );
    assert!(
        line_of(&text, "winning-post-2KiB:").contains("fits the memory budget"),
        "{text}"
    );
    assert!(
        line_of(&text, "v27-old-release.params").contains("not a set this zkforge proves"),
        "{text}"
    );
    assert!(text.contains("ready: 1 of 1 parameter set(s)"), "{text}");

    // A memory budget the key and a partition do not fit: refused as a job's load would
    // refuse it, with what to change, and nothing else can prove.
    let config = d.join("tight.toml");
    std::fs::write(&config, "[engine]\nmemory_budget = \"4MiB\"\n").unwrap();
    let (out, text) = doctor(
        d,
        &["--backend", "cpu", "--config", config.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        line_of(&text, "winning-post-2KiB:").contains("CANNOT BE PROVED HERE"),
        "{text}"
    );
    assert!(text.contains("a larger engine.memory_budget"), "{text}");

    // The key truncated: unusable, named, and nothing left to prove with.
    let params = id.params_path(d);
    let len = std::fs::metadata(&params).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&params)
        .unwrap();
    f.set_len(len - 100).unwrap();
    let (out, text) = doctor(d, &["--backend", "cpu"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        line_of(&text, "winning-post-2KiB ").contains("UNUSABLE"),
        "{text}"
    );
}

fn line_of<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines().find(|l| l.contains(needle)).unwrap_or("")
}
