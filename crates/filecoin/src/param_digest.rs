//! Parameter files checked against the Filecoin release: the published table (file name →
//! digest, filecoin-proofs' `parameters.json`) and the digest `paramfetch` computes.
//!
//! The digest is storage-proofs-core 19.1's (`parameter_cache::verify_production_entry`, the
//! check filecoin-proofs runs on a production key's first use; fil-proofs-param's `paramfetch`
//! and `parampublish` compute the same): BLAKE2b with default parameters (64-byte output, no
//! key, salt or personalization) over the whole file, in lower-case hex, cut to its first 32
//! characters (the hash's first 16 bytes). That is not BLAKE2b-128: the output length is a
//! parameter of the hash, so a 16-byte BLAKE2b would differ entirely.
//!
//! Test keys (`zkforge params generate`) carry the production file names but random points, so
//! the table cannot tell one from a damaged download; the generator leaves a record of the
//! digests of the files it wrote (`<stem>.zkforge-test.json`), and a file equal to its record is
//! a test key, not a mismatch.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use zkforge_groth16::{ParamsFile, VerifyingKey};

use crate::ParamsId;

/// Hex characters of the digest the table lists.
pub const DIGEST_HEX_CHARS: usize = 32;

/// One row of the published table.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Published {
    pub cid: String,
    pub digest: String,
    pub sector_size: u64,
}

/// The table of a parameter release: file name → digest.
#[derive(Debug)]
pub struct Manifest {
    entries: BTreeMap<String, Published>,
    source: String,
}

impl Manifest {
    /// The table of the release this build proves for: filecoin-proofs' `parameters.json`,
    /// embedded by storage-proofs-core (`PARAMETERS_DATA`, an `include_str!` of the same file,
    /// so it cannot drift from the crates that name the files).
    pub fn published() -> &'static Manifest {
        static TABLE: OnceLock<Manifest> = OnceLock::new();
        TABLE.get_or_init(|| {
            let source = format!(
                "filecoin-proofs' parameters.json (v{} parameters, storage-proofs-core 19.1)",
                storage_proofs_core::parameter_cache::VERSION
            );
            Manifest::from_json(
                storage_proofs_core::parameter_cache::PARAMETERS_DATA,
                &source,
            )
            .expect("the embedded parameters.json parses (storage-proofs-core parses it too)")
        })
    }

    /// A table in `parameters.json`'s format; `source` names it in reports.
    pub fn from_json(text: &str, source: &str) -> Result<Self> {
        let entries = serde_json::from_str(text).with_context(|| format!("parsing {source}"))?;
        Ok(Self {
            entries,
            source: source.into(),
        })
    }

    pub fn get(&self, file_name: &str) -> Option<&Published> {
        self.entries.get(file_name)
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The table's digest of `bytes` (see the module doc).
pub fn digest_bytes(bytes: &[u8]) -> String {
    hex32(
        &blake2b_simd::Params::new()
            .to_state()
            .update(bytes)
            .finalize(),
    )
}

fn hex32(hash: &blake2b_simd::Hash) -> String {
    hash.to_hex()[..DIGEST_HEX_CHARS].to_string()
}

/// A file's digest and length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDigest {
    pub digest: String,
    pub bytes: u64,
}

/// Bytes per read: large enough that the kernel's readahead keeps the disk busy, small enough
/// that three buffers are nothing beside the key.
const CHUNK: usize = 16 << 20;
/// Buffers in flight: one being hashed, one being filled, one ready.
const BUFFERS: usize = 3;

/// The digest of the file at `path`, read once front to back: a reader thread fills large
/// buffers while this thread hashes the previous one, so the time is the slower of the disk and
/// BLAKE2b, not their sum. `progress` gets the bytes of each buffer once hashed. A read error
/// names the file and the byte offset it happened at.
pub fn digest_file(path: &Path, progress: &mut dyn FnMut(u64)) -> Result<FileDigest> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let (full_tx, full_rx) = sync_channel::<(Vec<u8>, usize)>(BUFFERS);
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(BUFFERS);
    for _ in 0..BUFFERS {
        empty_tx
            .send(vec![0u8; CHUNK])
            .expect("room for every buffer");
    }
    let mut state = blake2b_simd::Params::new().to_state();
    let mut bytes = 0u64;
    let read = std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> std::result::Result<(), (u64, std::io::Error)> {
            let mut at = 0u64;
            while let Ok(mut buf) = empty_rx.recv() {
                let n = fill(&mut file, &mut buf).map_err(|(got, e)| (at + got as u64, e))?;
                at += n as u64;
                if n == 0 || full_tx.send((buf, n)).is_err() || n < CHUNK {
                    break;
                }
            }
            Ok(())
        });
        for (buf, n) in full_rx {
            state.update(&buf[..n]);
            bytes += n as u64;
            progress(n as u64);
            // The reader may have finished; a buffer it no longer needs is simply dropped.
            let _ = empty_tx.send(buf);
        }
        reader.join()
    });
    match read {
        Ok(Ok(())) => Ok(FileDigest {
            digest: hex32(&state.finalize()),
            bytes,
        }),
        Ok(Err((at, e))) => Err(anyhow::Error::new(e)
            .context(format!("reading {} at byte offset {at}", path.display()))),
        Err(_) => anyhow::bail!("reading {}: the reader thread panicked", path.display()),
    }
}

/// Reads until `buf` is full or the file ends; returns the bytes read, or the bytes read
/// before an error with the error.
fn fill(file: &mut File, buf: &mut [u8]) -> std::result::Result<usize, (usize, std::io::Error)> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((got, e)),
        }
    }
    Ok(got)
}

/// What a test key's generator recorded of the files it wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestKeyRecord {
    pub note: String,
    /// File name → digest and length.
    pub files: BTreeMap<String, RecordedFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedFile {
    pub digest: String,
    pub bytes: u64,
}

/// The record beside a parameter set's files: `<stem>.zkforge-test.json`.
pub fn record_path(id: &ParamsId, dir: &Path) -> PathBuf {
    dir.join(format!("{}.zkforge-test.json", id.stem))
}

/// The record that would describe the `.params` or `.vk` file at `path`.
fn record_path_for(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let stem = name
        .strip_suffix(".params")
        .or_else(|| name.strip_suffix(".vk"))?;
    Some(path.with_file_name(format!("{stem}.zkforge-test.json")))
}

/// Reads the record at `path`; `None` when there is none.
pub fn read_record(path: &Path) -> Result<Option<TestKeyRecord>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("parsing {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("reading {}", path.display()))),
    }
}

/// Hashes the set's `.params` and `.vk` in `dir` and records them as a test key (through a
/// temporary name and a rename: a reader sees the old record, none, or the whole new one).
pub fn write_record(id: &ParamsId, dir: &Path) -> Result<TestKeyRecord> {
    let mut files = BTreeMap::new();
    for path in [id.params_path(dir), id.vk_path(dir)] {
        let d = digest_file(&path, &mut |_| {})?;
        let name = path.file_name().expect("a file name").to_string_lossy();
        files.insert(
            name.into_owned(),
            RecordedFile {
                digest: d.digest,
                bytes: d.bytes,
            },
        );
    }
    let record = TestKeyRecord {
        note: "random test-only parameters from `zkforge params generate`, not the published \
               Filecoin parameters: the digests of the files as written"
            .into(),
        files,
    };
    let path = record_path(id, dir);
    let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
    let text = serde_json::to_string_pretty(&record).expect("a record serializes");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(record)
}

/// Removes the set's record, if any (before its files are rewritten).
pub fn remove_record(id: &ParamsId, dir: &Path) -> Result<()> {
    let path = record_path(id, dir);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow::Error::new(e).context(format!("removing {}", path.display())))
        }
        _ => Ok(()),
    }
}

/// True when the set's `.vk` in `dir` is the published one: a set whose small `.vk` is the
/// release's is a downloaded set, never a test key (checked before recording one).
pub fn vk_is_published(id: &ParamsId, dir: &Path) -> bool {
    let path = id.vk_path(dir);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match (Manifest::published().get(name), std::fs::read(&path)) {
        (Some(p), Ok(bytes)) => digest_bytes(&bytes) == p.digest,
        _ => false,
    }
}

/// What a file's digest says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Equal to the published digest.
    Ok,
    /// Not the published file, but equal to the record of the test key generated under its
    /// name.
    TestKey,
    /// A name the table does not list, and no record of a test key.
    NotInTable,
    /// Different from the digest it should have.
    Mismatch { expected: String, against: Against },
}

/// Which digest a mismatched file was held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Against {
    Published,
    TestKeyRecord,
}

impl Against {
    pub fn describe(self) -> &'static str {
        match self {
            Against::Published => "the published table",
            Against::TestKeyRecord => "the test key's record",
        }
    }
}

/// One file checked.
#[derive(Clone, Debug)]
pub struct FileCheck {
    pub path: PathBuf,
    pub name: String,
    pub bytes: u64,
    pub digest: String,
    pub verdict: Verdict,
    /// The table's row for the name, if it lists it.
    pub published: Option<Published>,
    /// For a mismatch: what a layout check finds wrong (a truncation, a bad header), if
    /// anything — the likely cause, named with its offset.
    pub damage: Option<String>,
    pub secs: f64,
}

impl FileCheck {
    pub fn failed(&self) -> bool {
        matches!(self.verdict, Verdict::Mismatch { .. })
    }

    /// One line saying what is wrong, naming the file and both digests; `None` when nothing
    /// is.
    pub fn problem(&self) -> Option<String> {
        match &self.verdict {
            Verdict::Mismatch { expected, against } => Some(format!(
                "{}: BLAKE2b digest {} differs from {expected} in {}{}",
                self.path.display(),
                self.digest,
                against.describe(),
                self.damage
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )),
            _ => None,
        }
    }
}

/// Hashes the file at `path` and holds it to `table` (and to a test key's record beside it).
pub fn check_file(
    path: &Path,
    table: &Manifest,
    progress: &mut dyn FnMut(u64),
) -> Result<FileCheck> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let t = Instant::now();
    let d = digest_file(path, progress)?;
    let secs = t.elapsed().as_secs_f64();
    let published = table.get(&name).cloned();
    // A damaged or unreadable record only means the file cannot be a recorded test key.
    let recorded = record_path_for(path)
        .and_then(|p| read_record(&p).ok().flatten())
        .and_then(|r| r.files.get(&name).cloned());
    let verdict = match (&published, &recorded) {
        (Some(p), _) if p.digest == d.digest => Verdict::Ok,
        (_, Some(r)) if r.digest == d.digest && r.bytes == d.bytes => Verdict::TestKey,
        (Some(p), _) => Verdict::Mismatch {
            expected: p.digest.clone(),
            against: Against::Published,
        },
        (None, Some(r)) => Verdict::Mismatch {
            expected: r.digest.clone(),
            against: Against::TestKeyRecord,
        },
        (None, None) => Verdict::NotInTable,
    };
    let damage = match verdict {
        Verdict::Mismatch { .. } => layout_problem(path),
        _ => None,
    };
    Ok(FileCheck {
        path: path.to_path_buf(),
        name,
        bytes: d.bytes,
        digest: d.digest,
        verdict,
        published,
        damage,
        secs,
    })
}

/// What reading the file's layout finds wrong (headers and lengths, and the verifying key's
/// points; a `.params` file's query points are not decoded: too slow for a 47 GB file).
fn layout_problem(path: &Path) -> Option<String> {
    let name = path.to_string_lossy();
    let err = if name.ends_with(".params") {
        ParamsFile::open(path).err()
    } else if name.ends_with(".vk") {
        VerifyingKey::read_file(path).err()
    } else {
        None
    }?;
    Some(match err {
        zkforge_groth16::Error::MalformedParams { what, .. } => format!("damaged: {what}"),
        other => format!("unreadable as a key: {other}"),
    })
}
