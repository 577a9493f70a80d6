//! Where circuit recordings go when the parameter directory cannot be written (cuzk's
//! `/data/zk/params`, owned by root, read by a daemon running as its own user): into the
//! daemon's own directory, said once, and the job proves all the same.

use std::path::Path;
use std::sync::Arc;

use zkforge_engine::{params_dir_source, probe_writable, Engine};
use zkforge_groth16::CpuBackend;

use super::common::{job, keys, proofs_verify, submit};
use super::{completed, config};

#[test]
fn the_write_probe_creates_a_file_and_fails_where_none_can_be_created() {
    let dir = tempfile::tempdir().unwrap();
    probe_writable(dir.path()).unwrap();
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the probe leaves nothing behind"
    );
    // Places no process can create a file in, root included (tests run as root in CI):
    // procfs, a file taken for a directory, a directory that does not exist.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for unwritable in [Path::new("/proc/self"), &file, &dir.path().join("none")] {
        assert!(
            probe_writable(unwritable).is_err(),
            "{}",
            unwritable.display()
        );
    }
}

#[test]
fn recordings_go_to_the_fallback_where_the_key_directory_cannot_be_written() {
    let params = tempfile::tempdir().unwrap();
    let own = tempfile::tempdir().unwrap();
    let (id, pk) = keys_with_file(params.path());
    let fallback = own.path().join("r1cs");
    // The check injected: as root, no ordinary directory refuses a file.
    let refuse = |_: &Path| Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
    let (source, said) = params_dir_source(params.path().into(), fallback.clone(), refuse);
    let said = said.expect("the fallback is said");
    assert!(
        said.contains(&params.path().display().to_string())
            && said.contains(&fallback.display().to_string())
            && said.contains("cannot be written"),
        "{said}"
    );
    let e = Engine::start(config(1), Arc::new(CpuBackend::new()), source).unwrap();
    let j = job(12, 2);
    let bytes = completed_job(&e, j.clone());
    assert!(proofs_verify(&pk, &j, &bytes), "the job proves");
    assert!(
        id.matrices_path(&fallback).exists(),
        "recorded in the fallback"
    );
    assert!(
        !id.matrices_path(params.path()).exists(),
        "nothing beside the key"
    );

    // A writable directory keeps its recordings beside the keys, and nothing is said.
    let (source, said) = params_dir_source(
        params.path().into(),
        fallback.join("unused"),
        probe_writable,
    );
    assert_eq!(said, None);
    let e = Engine::start(config(1), Arc::new(CpuBackend::new()), source).unwrap();
    completed_job(&e, j);
    assert!(id.matrices_path(params.path()).exists());
    assert!(!fallback.join("unused").exists());
}

fn keys_with_file(dir: &Path) -> (zkforge_circuits::ParamsId, zkforge_groth16::ProvingKey) {
    let (id, pk) = keys(12);
    pk.write_file(&id.params_path(dir)).unwrap();
    (id, pk)
}

fn completed_job(e: &Engine, j: zkforge_circuits::SyntheticJob) -> Vec<u8> {
    let id = submit(e, j);
    completed(e, id)
}
