//! Parameter files held to the published table: the digest against RFC 7693's vectors and an
//! independent BLAKE2b written here from the RFC (over a file spanning several of the reader's
//! buffers), the embedded table against the registry's file names, and every verdict.

mod common;

use std::path::Path;

use zkforge_filecoin::param_digest::{
    self, check_file, digest_bytes, digest_file, Against, Manifest, Verdict,
};
use zkforge_filecoin::{registry, ProofKind};

/// BLAKE2b-512 as RFC 7693 section 3 defines it (no key), independent of blake2b_simd.
mod reference {
    const IV: [u64; 8] = [
        0x6a09e667f3bcc908,
        0xbb67ae8584caa73b,
        0x3c6ef372fe94f82b,
        0xa54ff53a5f1d36f1,
        0x510e527fade682d1,
        0x9b05688c2b3e6c1f,
        0x1f83d9abfb41bd6b,
        0x5be0cd19137e2179,
    ];
    const SIGMA: [[usize; 16]; 10] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ];

    fn g(v: &mut [u64; 16], (a, b, c, d): (usize, usize, usize, usize), x: u64, y: u64) {
        v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
        v[d] = (v[d] ^ v[a]).rotate_right(32);
        v[c] = v[c].wrapping_add(v[d]);
        v[b] = (v[b] ^ v[c]).rotate_right(24);
        v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
        v[d] = (v[d] ^ v[a]).rotate_right(16);
        v[c] = v[c].wrapping_add(v[d]);
        v[b] = (v[b] ^ v[c]).rotate_right(63);
    }

    fn compress(h: &mut [u64; 8], block: &[u8], t: u128, last: bool) {
        let m: Vec<u64> = block
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect();
        let mut v = [0u64; 16];
        v[..8].copy_from_slice(h);
        v[8..].copy_from_slice(&IV);
        v[12] ^= t as u64;
        v[13] ^= (t >> 64) as u64;
        if last {
            v[14] = !v[14];
        }
        for round in 0..12 {
            let s = &SIGMA[round % 10];
            g(&mut v, (0, 4, 8, 12), m[s[0]], m[s[1]]);
            g(&mut v, (1, 5, 9, 13), m[s[2]], m[s[3]]);
            g(&mut v, (2, 6, 10, 14), m[s[4]], m[s[5]]);
            g(&mut v, (3, 7, 11, 15), m[s[6]], m[s[7]]);
            g(&mut v, (0, 5, 10, 15), m[s[8]], m[s[9]]);
            g(&mut v, (1, 6, 11, 12), m[s[10]], m[s[11]]);
            g(&mut v, (2, 7, 8, 13), m[s[12]], m[s[13]]);
            g(&mut v, (3, 4, 9, 14), m[s[14]], m[s[15]]);
        }
        for i in 0..8 {
            h[i] ^= v[i] ^ v[i + 8];
        }
    }

    pub fn blake2b_512_hex(data: &[u8]) -> String {
        let mut h = IV;
        h[0] ^= 0x0101_0000 ^ 64; // depth 1, fanout 1, no key, 64-byte digest
        let mut at = 0;
        while data.len() - at > 128 {
            compress(&mut h, &data[at..at + 128], (at + 128) as u128, false);
            at += 128;
        }
        let mut last = [0u8; 128];
        last[..data.len() - at].copy_from_slice(&data[at..]);
        compress(&mut h, &last, data.len() as u128, true);
        h.iter()
            .flat_map(|w| w.to_le_bytes())
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[test]
fn the_digest_is_blake2b_512_cut_to_32_hex_characters() {
    // RFC 7693 Appendix A, and BLAKE2b-512 of the empty string.
    let abc = "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
               7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923";
    let empty = "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419\
                 d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce";
    assert_eq!(reference::blake2b_512_hex(b"abc"), abc);
    assert_eq!(reference::blake2b_512_hex(b""), empty);
    assert_eq!(digest_bytes(b"abc"), abc[..32]);
    assert_eq!(digest_bytes(b""), empty[..32]);

    // A file over two of the reader's 16 MiB buffers and an odd tail, each buffer's bytes
    // reported once.
    let len = (33 << 20) + 13;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blob.params");
    std::fs::write(&path, &bytes).unwrap();
    let mut seen = 0u64;
    let d = digest_file(&path, &mut |n| seen += n).unwrap();
    assert_eq!((d.bytes, seen), (len as u64, len as u64));
    let full = reference::blake2b_512_hex(&bytes);
    assert_eq!(d.digest, full[..32]);
    assert_eq!(digest_bytes(&bytes), d.digest);
    // coreutils' b2sum is a third implementation, where it is installed.
    if let Ok(out) = std::process::Command::new("b2sum").arg(&path).output() {
        let line = String::from_utf8_lossy(&out.stdout);
        assert_eq!(line.split_whitespace().next(), Some(full.as_str()));
    }

    let err = digest_file(&dir.path().join("none.params"), &mut |_| {}).unwrap_err();
    assert!(format!("{err:#}").contains("none.params"), "{err:#}");
}

#[test]
fn the_embedded_table_lists_every_current_parameter_set() {
    let table = Manifest::published();
    assert!(table.source().contains("parameters.json"));
    let kinds = [
        ProofKind::PoRep,
        ProofKind::WinningPost,
        ProofKind::WindowPost,
        ProofKind::SnapDeals,
    ];
    for kind in kinds {
        for size in [2048u64, 8 << 20, 512 << 20, 32 << 30, 64 << 30] {
            let id = registry::params_id(kind, size).unwrap();
            for ext in ["params", "vk"] {
                let name = format!("{}.{ext}", id.stem);
                let row = table.get(&name).unwrap_or_else(|| {
                    panic!("{} {ext}: {name} not in the table", id.circuit_id())
                });
                assert_eq!(row.sector_size, size, "{name}");
                assert_eq!(row.digest.len(), 32, "{name}");
                assert!(row.digest.bytes().all(|b| b.is_ascii_hexdigit()));
            }
        }
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn every_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "v1-good.vk", b"published bytes");
    let bad = write(dir.path(), "v1-bad.params", &[7u8; 1000]);
    let other = write(dir.path(), "v1-other.params", b"nobody lists me");
    let table = Manifest::from_json(
        &format!(
            r#"{{"v1-good.vk": {{"cid": "Qm1", "digest": "{}", "sector_size": 2048}},
                "v1-bad.params": {{"cid": "Qm2", "digest": "{}", "sector_size": 2048}}}}"#,
            digest_bytes(b"published bytes"),
            digest_bytes(b"the real file")
        ),
        "a test table",
    )
    .unwrap();
    let check = |p: &Path| check_file(p, &table, &mut |_| {}).unwrap();

    let ok = check(&good);
    assert_eq!(ok.verdict, Verdict::Ok);
    assert_eq!(
        (ok.bytes, ok.published.as_ref().unwrap().cid.as_str()),
        (15, "Qm1")
    );
    assert!(ok.problem().is_none());

    let mismatch = check(&bad);
    assert_eq!(
        mismatch.verdict,
        Verdict::Mismatch {
            expected: digest_bytes(b"the real file"),
            against: Against::Published
        }
    );
    let problem = mismatch.problem().unwrap();
    assert!(
        problem.contains("v1-bad.params")
            && problem.contains(&digest_bytes(&[7u8; 1000]))
            && problem.contains(&digest_bytes(b"the real file")),
        "{problem}"
    );
    // The layout check says why: 1000 bytes of 7s are not a key.
    assert!(
        mismatch.damage.as_deref().unwrap().contains("damaged"),
        "{:?}",
        mismatch.damage
    );

    assert_eq!(check(&other).verdict, Verdict::NotInTable);
    assert!(!check(&other).failed());

    // A record of a test key under the same names: a file equal to it is a test key, whether
    // or not the table lists its name; one that differs from it is a mismatch.
    let record = serde_json::json!({
        "note": "test",
        "files": {
            "v1-bad.params": {"digest": digest_bytes(&[7u8; 1000]), "bytes": 1000},
            "v1-other.params": {"digest": digest_bytes(b"something else"), "bytes": 14},
        }
    });
    write(
        dir.path(),
        "v1-bad.zkforge-test.json",
        record.to_string().as_bytes(),
    );
    write(
        dir.path(),
        "v1-other.zkforge-test.json",
        record.to_string().as_bytes(),
    );
    assert_eq!(check(&bad).verdict, Verdict::TestKey);
    assert_eq!(
        check(&other).verdict,
        Verdict::Mismatch {
            expected: digest_bytes(b"something else"),
            against: Against::TestKeyRecord
        }
    );
    // A damaged record vouches for nothing.
    write(dir.path(), "v1-bad.zkforge-test.json", b"{not json");
    assert!(check(&bad).failed());
}

/// The 2 KiB test key the shared cache holds has a record that names both of its files, and
/// both are what it records; the record goes when the files are rewritten.
#[test]
fn generated_test_keys_carry_a_record_of_their_digests() {
    let (dir, id) = common::params(ProofKind::WinningPost);
    let record = param_digest::read_record(&param_digest::record_path(&id, &dir))
        .unwrap()
        .expect("a record beside the generated set");
    for path in [id.params_path(&dir), id.vk_path(&dir)] {
        let c = check_file(&path, Manifest::published(), &mut |_| {}).unwrap();
        assert_eq!(c.verdict, Verdict::TestKey, "{}", path.display());
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(record.files[name].digest, c.digest);
    }
    assert!(!param_digest::vk_is_published(&id, &dir));
}
