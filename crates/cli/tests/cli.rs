//! The `zkforge` binary end to end: help texts and the demo.

use std::process::Command;

fn zkforge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zkforge"))
}

#[test]
fn every_subcommand_has_help() {
    for args in [&["--help"][..], &["demo", "--help"], &["bench", "--help"], &["bench", "local", "--help"]] {
        let out = zkforge().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage"), "{args:?}");
    }
}

#[test]
fn demo_proves_verifies_and_reuses_cached_keys() {
    let cache = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let out = zkforge()
            .args(["demo", "--constraints", "3000", "--cache"])
            .arg(cache.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("ok"), "{stdout}");
        let proof = stdout.lines().find_map(|l| l.strip_prefix("proof   ")).unwrap();
        assert_eq!(proof.len(), 384, "192 bytes in hex");
    }
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1, "one cached key, reused");
}

#[test]
fn bad_arguments_are_refused_with_a_message() {
    let out = zkforge().args(["demo", "--bit-fraction", "1.5"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bit-fraction"));
}
