//! Where parameter sets come from: the source loads a proving key in the form the backend
//! wants, and says where a circuit's recorded constraint matrices are cached.

use std::path::PathBuf;

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
