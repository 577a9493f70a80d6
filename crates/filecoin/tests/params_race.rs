//! Two generators of the same test parameters at once, as two threads and as two processes
//! sharing a fresh directory: one set is generated, both callers succeed, the `.params` and
//! `.vk` on disk belong together, and no temporary file is left.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use zkforge_filecoin::{params, ProofKind};
use zkforge_groth16::generator::GenProgress;
use zkforge_groth16::{ProvingKey, ReadOptions, VerifyingKey};

/// The cheapest real parameter set (seconds to generate).
const KIND: ProofKind = ProofKind::WinningPost;
const CHILD_DIR: &str = "ZKFORGE_PARAMS_RACE_DIR";

/// Counts key generations (the generator calls `start` once per key).
#[derive(Default)]
struct Generations(AtomicUsize);

impl GenProgress for Generations {
    fn start(&self, _total: u64) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The files in `dir` are one consistent set and nothing half-written is left.
fn assert_one_consistent_set(dir: &Path) {
    let id = zkforge_filecoin::registry::params_id(KIND, 2048).unwrap();
    let pk = ProvingKey::read_file(&id.params_path(dir), ReadOptions::default()).unwrap();
    let vk = VerifyingKey::read_file(&id.vk_path(dir)).unwrap();
    assert_eq!(pk.vk, vk, ".params and .vk come from the same generation");
    assert!(id.meta_path(dir).exists());
    let leftovers: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn two_threads_generating_at_once_make_one_set() {
    let dir = tempfile::tempdir().unwrap();
    let generations = Arc::new(Generations::default());
    let start = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (dir, generations, start) =
                (dir.path().to_path_buf(), generations.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                params::ensure_test_params(KIND, 2048, &dir, &*generations)
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap().expect("both callers get the parameters");
    }
    assert_eq!(generations.0.load(Ordering::SeqCst), 1, "generated once");
    assert_one_consistent_set(dir.path());
}

#[test]
fn two_processes_generating_at_once_make_one_set() {
    let dir = tempfile::tempdir().unwrap();
    let spawn = || {
        Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "generator_process", "--nocapture"])
            .env(CHILD_DIR, dir.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [spawn(), spawn()];
    let mut generated = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        generated += stdout.matches("generations: 1").count();
        assert!(stdout.contains("generations: "), "{stdout}");
    }
    assert_eq!(generated, 1, "exactly one process generated the keys");
    assert_one_consistent_set(dir.path());
}

/// One of the two processes above (run by that test, never on its own).
#[test]
#[ignore = "a child process of two_processes_generating_at_once_make_one_set"]
fn generator_process() {
    let dir = std::env::var_os(CHILD_DIR).expect("run by two_processes_generating_at_once");
    let generations = Generations::default();
    params::ensure_test_params(KIND, 2048, Path::new(&dir), &generations).unwrap();
    println!("generations: {}", generations.0.load(Ordering::SeqCst));
}
