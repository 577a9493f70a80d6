//! A client in another language: a Python grpcio script, with stubs generated from our .proto,
//! proves a 2 KiB PoRep through `zkforge daemon`; filecoin-proofs verifies the proof.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use zkforge_filecoin::ProofKind;
use zkforge_fixtures as fixtures;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Stops the daemon even when an assertion fails.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn python_grpcio_client_proves_a_2kib_porep() {
    let dir = common::params_2kib(ProofKind::PoRep);
    let work = tempfile::tempdir().unwrap();
    let m = fixtures::make(2048, &work.path().join("fx"), 41).unwrap();

    let env = Command::new(repo_root().join("scripts/python-grpc-env.sh"))
        .arg(work.path().join("stubs"))
        .output()
        .unwrap();
    assert!(
        env.status.success(),
        "python-grpc-env.sh: {}",
        String::from_utf8_lossy(&env.stderr)
    );
    let out = String::from_utf8(env.stdout).unwrap();
    let value = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .to_string()
    };
    let (python, pythonpath) = (value("PYTHON="), value("PYTHONPATH="));

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let _daemon = Daemon(
        Command::new(env!("CARGO_BIN_EXE_zkforge"))
            .args([
                "--log",
                "warn",
                "daemon",
                "--listen",
                &addr,
                "--backend",
                "cpu",
                "--params",
            ])
            .arg(&dir)
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the daemon did not start listening"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let proof_file = work.path().join("proof.bin");
    let run = Command::new(python)
        .env("PYTHONPATH", pythonpath)
        .arg(repo_root().join("crates/server/tests/python/prove_client.py"))
        .arg(&addr)
        .arg(work.path().join("fx").join(&m.c1_wrapper))
        .arg(&proof_file)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let proof = std::fs::read(&proof_file).unwrap();
    assert_eq!(proof.len(), 192);
    assert!(
        m.verify_porep(&proof).unwrap(),
        "filecoin-proofs accepts the proof the Python client got"
    );
}
