//! A damaged 2 KiB key (the WinningPoSt test key, copied) on both load paths: decoded into
//! memory (`ProvingKey::read_file`, the CPU's) and located in its file (`ParamsFile::open`,
//! then its points decoded range by range as the input side is; the GPU decodes the rest on
//! the device with the same checks). A cut, a flipped byte in a section's length, in a point,
//! in the verifying key: each a named error with the file and the byte offset, never a panic.
//! A point swapped for another valid one loads on both paths (nothing in the file says it is
//! wrong): the digest check refuses it, and the proof's self-check (crates/cli/tests/
//! daemon_config.rs, through the engine) keeps its proof from being returned.

mod common;

use std::path::{Path, PathBuf};

use zkforge_filecoin::param_digest::{check_file, Manifest, Verdict};
use zkforge_filecoin::ProofKind;
use zkforge_groth16::srs::Query;
use zkforge_groth16::{ParamsFile, ProvingKey, ReadOptions, VerifyingKey};

struct Key {
    params: Vec<u8>,
    vk: Vec<u8>,
    /// Offsets of each query's points, from the intact file.
    file: ParamsFile,
    work: tempfile::TempDir,
    params_name: String,
    vk_name: String,
}

fn key() -> Key {
    let (dir, id) = common::params(ProofKind::WinningPost);
    let work = tempfile::tempdir().unwrap();
    // The copy keeps the production names and the test key's record, as a params dir has them.
    let mut names = Vec::new();
    for path in [
        id.params_path(&dir),
        id.vk_path(&dir),
        zkforge_filecoin::param_digest::record_path(&id, &dir),
    ] {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        std::fs::copy(&path, work.path().join(&name)).unwrap();
        names.push(name);
    }
    let params = std::fs::read(id.params_path(&dir)).unwrap();
    let vk = std::fs::read(id.vk_path(&dir)).unwrap();
    let file = ParamsFile::open(&work.path().join(&names[0])).unwrap();
    Key {
        params,
        vk,
        file,
        params_name: names[0].clone(),
        vk_name: names[1].clone(),
        work,
    }
}

impl Key {
    fn write_params(&self, bytes: &[u8]) -> PathBuf {
        let path = self.work.path().join(&self.params_name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn flipped(&self, at: u64) -> Vec<u8> {
        let mut b = self.params.clone();
        b[at as usize] ^= 0x01;
        b
    }
}

/// Both load paths' errors for the `.params` at `path`: the decoded key's, and the file key's
/// at open or, when the layout is sound, while decoding every query range by range.
fn both_errors(path: &Path) -> [String; 2] {
    let memory = ProvingKey::read_file(path, ReadOptions::default())
        .expect_err("a damaged key decoded")
        .to_string();
    let file = match ParamsFile::open(path) {
        Err(e) => e.to_string(),
        Ok(f) => {
            let decode = |q: Query| -> Result<(), zkforge_groth16::Error> {
                let len = f.section(q).len;
                match q {
                    Query::BG2 => f.g2_points(0, len).map(drop),
                    _ => f.g1_points(q, 0, len).map(drop),
                }
            };
            Query::ALL
                .into_iter()
                .find_map(|q| decode(q).err())
                .expect("a damaged key decoded from its file")
                .to_string()
        }
    };
    [memory, file]
}

fn assert_named(errors: &[String; 2], path: &Path, wanted: &[&str]) {
    let name = path.file_name().unwrap().to_str().unwrap();
    for (e, which) in errors.iter().zip(["decoded", "in its file"]) {
        assert!(
            e.contains(name) && e.contains("offset") && wanted.iter().all(|w| e.contains(w)),
            "{which}: {e} (wanted {wanted:?})"
        );
    }
}

#[test]
fn a_cut_key_is_named_with_the_offset_on_both_load_paths() {
    let k = key();
    let h = k.file.section(Query::H).offset;
    for (cut, section) in [
        (300, "vk.beta_g2"),
        (h - 2, "h"),
        (h + 96 * 3 + 40, "h"),
        (k.params.len() as u64 - 1, "b_g2"),
    ] {
        let path = k.write_params(&k.params[..cut as usize]);
        let errors = both_errors(&path);
        assert!(errors.iter().all(|e| e.contains("truncated")), "{errors:?}");
        assert!(
            errors[0].contains(&format!("truncated in {section}")),
            "{errors:?}"
        );
        assert_named(&errors, &path, &[]);
    }
}

#[test]
fn a_flipped_length_is_named_with_the_header_offset() {
    let k = key();
    let h_header = k.file.section(Query::H).offset - 4;
    let bg2_header = k.file.section(Query::BG2).offset - 4;
    // The top byte of h's count (+2^24 points), the low byte of b_g2's (one point off), the
    // low byte of vk.ic's (every later section shifted by a point).
    let cases: [(u64, &[&str]); 3] = [
        (
            h_header,
            &["truncated in h", &format!("header at offset {h_header}")],
        ),
        (bg2_header + 3, &[]),
        (864 + 3, &[]),
    ];
    for (at, wanted) in cases {
        let path = k.write_params(&k.flipped(at));
        let errors = both_errors(&path);
        assert_named(&errors, &path, wanted);
    }
}

#[test]
fn a_flipped_byte_in_a_point_is_named_with_the_point_and_its_offset() {
    let k = key();
    let cases = [
        (Query::H, 3),
        (Query::L, k.file.section(Query::L).len / 2),
        (Query::BG2, k.file.section(Query::BG2).len - 1),
    ];
    for (q, index) in cases {
        let offset = k.file.point_offset(q, index);
        // A byte of the y coordinate: off the curve.
        let path = k.write_params(&k.flipped(offset + 50));
        let errors = both_errors(&path);
        assert_named(
            &errors,
            &path,
            &[
                &format!("{}[{index}] at offset {offset}", q.name()),
                "not on the curve",
            ],
        );
    }
}

#[test]
fn a_flipped_byte_in_the_verifying_key_is_named_in_both_files() {
    let k = key();
    // alpha_g1's x coordinate, at the start of both files; delta_g2 (offset 672) in the .vk.
    let path = k.write_params(&k.flipped(10));
    assert_named(
        &both_errors(&path),
        &path,
        &["vk.alpha_g1 at offset 0", "not a valid G1 point"],
    );
    let vk_path = k.work.path().join(&k.vk_name);
    let mut vk = k.vk.clone();
    vk[672 + 100] ^= 0x01;
    std::fs::write(&vk_path, &vk).unwrap();
    let e = VerifyingKey::read_file(&vk_path).unwrap_err().to_string();
    assert!(
        e.contains(&k.vk_name) && e.contains("vk.delta_g2 at offset 672"),
        "{e}"
    );
    // Cut inside ic.
    std::fs::write(&vk_path, &k.vk[..k.vk.len() - 5]).unwrap();
    let e = VerifyingKey::read_file(&vk_path).unwrap_err().to_string();
    assert!(
        e.contains("truncated in vk.ic") && e.contains("offset"),
        "{e}"
    );
}

/// Two valid points swapped: no load can tell, the digest can.
#[test]
fn a_valid_point_in_the_wrong_place_loads_but_fails_the_digest() {
    let k = key();
    let (a, b) = (
        k.file.point_offset(Query::H, 0) as usize,
        k.file.point_offset(Query::H, 1) as usize,
    );
    let mut swapped = k.params.clone();
    swapped[a..b].copy_from_slice(&k.params[b..b + 96]);
    swapped[b..b + 96].copy_from_slice(&k.params[a..b]);
    let path = k.write_params(&swapped);
    let pk = ProvingKey::read_file(&path, ReadOptions::default()).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    assert_eq!(file.g1_points(Query::H, 0, 2).unwrap(), pk.h[..2]);
    let c = check_file(&path, Manifest::published(), &mut |_| {}).unwrap();
    assert!(
        matches!(c.verdict, Verdict::Mismatch { .. }),
        "{:?}",
        c.verdict
    );
    assert!(c.problem().unwrap().contains(&k.params_name));
}
