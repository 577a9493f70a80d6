//! Where parameter sets come from: the source loads a proving key in the form the backend
//! wants, and says where a circuit's recorded constraint matrices are cached.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use zkforge_circuits::ParamsId;
use zkforge_groth16::{LoadedKey, ParamsFile, QueryLengths, ReadOptions};

/// Where parameter sets come from.
pub trait ParamsSource: Send + Sync {
    /// The point count of every query, read without decoding any point.
    fn lengths(&self, id: &ParamsId) -> Result<QueryLengths>;
    /// Loads the key: left in its file when `in_file` (a backend that uploads it itself),
    /// else decoded into memory.
    fn load(&self, id: &ParamsId, in_file: bool) -> Result<LoadedKey>;
    /// Where the circuit's recorded matrices are kept between runs, if anywhere.
    fn matrices_cache(&self, id: &ParamsId) -> Option<PathBuf> {
        let _ = id;
        None
    }
}

/// Parameter files (bellperson's `.params` layout, named by `ParamsId`) in one directory;
/// matrices cached beside them.
pub struct ParamsDir(pub PathBuf);

impl ParamsDir {
    fn open(&self, id: &ParamsId) -> Result<ParamsFile> {
        let path = id.params_path(&self.0);
        if !path.exists() {
            // The same message, with the command that makes test keys, as a full load gives.
            id.load(&self.0, ReadOptions::default())?;
        }
        ParamsFile::open(&path).with_context(|| format!("opening {}", path.display()))
    }
}

impl ParamsSource for ParamsDir {
    fn lengths(&self, id: &ParamsId) -> Result<QueryLengths> {
        Ok(self.open(id)?.lengths())
    }

    fn load(&self, id: &ParamsId, in_file: bool) -> Result<LoadedKey> {
        let file = self.open(id)?;
        Ok(if in_file {
            LoadedKey::File(Box::new(file))
        } else {
            LoadedKey::Memory(file.decode(ReadOptions::default())?.into())
        })
    }

    fn matrices_cache(&self, id: &ParamsId) -> Option<PathBuf> {
        Some(id.matrices_path(&self.0))
    }
}

/// Parameter files in one directory and the recordings of their circuits in another: where
/// the daemon cannot write beside its keys (cuzk's `/data/zk/params`, owned by root, and a
/// daemon running as its own user). A recording already beside a key is read from there.
pub struct RecordingsApart {
    pub keys: ParamsDir,
    pub recordings: PathBuf,
}

impl ParamsSource for RecordingsApart {
    fn lengths(&self, id: &ParamsId) -> Result<QueryLengths> {
        self.keys.lengths(id)
    }

    fn load(&self, id: &ParamsId, in_file: bool) -> Result<LoadedKey> {
        self.keys.load(id, in_file)
    }

    fn matrices_cache(&self, id: &ParamsId) -> Option<PathBuf> {
        let beside = id.matrices_path(&self.keys.0);
        Some(match beside.exists() {
            true => beside,
            false => id.matrices_path(&self.recordings),
        })
    }
}

/// Whether files can be created in `dir`, found by creating one (and removing it): the
/// permission bits alone do not say (root passes them; a read-only mount or an ACL does not).
pub fn probe_writable(dir: &Path) -> std::io::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(
        ".zkforge-write-probe-{}-{nanos}",
        std::process::id()
    ));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

/// The source for the parameter directory `dir`: recordings beside the keys where `writable`
/// says `dir` takes new files, else in `fallback` (created here), with the sentence that says
/// so once at start. Never an error: at worst a recording is not kept between runs.
pub fn params_dir_source(
    dir: PathBuf,
    fallback: PathBuf,
    writable: impl Fn(&Path) -> std::io::Result<()>,
) -> (Box<dyn ParamsSource>, Option<String>) {
    let Err(e) = writable(&dir) else {
        return (Box::new(ParamsDir(dir)), None);
    };
    let mut said = format!(
        "the parameter directory {} cannot be written ({e}): circuit recordings (.r1cs) go to {}",
        dir.display(),
        fallback.display()
    );
    if let Err(e) = std::fs::create_dir_all(&fallback) {
        said.push_str(&format!(
            ", which cannot be created either ({e}): each set is recorded again at its first \
             load after a restart"
        ));
    }
    let source = RecordingsApart {
        keys: ParamsDir(dir),
        recordings: fallback,
    };
    (Box::new(source), Some(said))
}
