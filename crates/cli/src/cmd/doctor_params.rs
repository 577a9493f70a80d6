//! `zkforge doctor`'s parameter files: each set in the directory, named by its proof kind and
//! sector size, with a cheap check by default (the header read and the layout accounting for
//! every byte of the `.params`, the name looked up in the published table) and, with
//! `--verify`, `params verify`'s digest check of both files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use zkforge_filecoin::param_digest::{self, Manifest, Verdict};
use zkforge_filecoin::{registry, ParamsId, ProofKind};
use zkforge_groth16::{ParamsFile, QueryLengths};

use super::daemon::SECTOR_SIZES;

/// A parameter set found in the directory.
pub struct FoundSet {
    pub id: ParamsId,
    pub params_bytes: u64,
    /// The key's query lengths, or why its header or layout is wrong.
    pub header: Result<QueryLengths, String>,
    pub has_vk: bool,
    /// Where the files come from, by name alone: the release's table, a test key's record.
    pub origin: &'static str,
    /// `--verify`'s verdict on each file: None when not asked; Err names what failed.
    pub verified: Option<Result<String, String>>,
}

impl FoundSet {
    /// The set can be loaded: its header is sound and, when verified, neither file failed.
    pub fn usable(&self) -> bool {
        self.header.is_ok() && !matches!(self.verified, Some(Err(_)))
    }

    /// One line: what it is, how large, what the checks say.
    pub fn describe(&self) -> String {
        let header = match &self.header {
            Ok(_) => "header OK".to_string(),
            Err(e) => format!("UNUSABLE: {e}"),
        };
        let vk = if self.has_vk {
            ""
        } else {
            "; no .vk beside it"
        };
        let verified = match &self.verified {
            None => "; digests not checked (--verify)".to_string(),
            Some(Ok(v)) => format!("; digests: {v}"),
            Some(Err(e)) => format!("; DIGEST CHECK FAILED: {e}"),
        };
        format!(
            "{:<20} {:>9.2} GB  {header}; {}{vk}{verified}",
            self.id.circuit_id(),
            self.params_bytes as f64 / 1e9,
            self.origin
        )
    }
}

/// What the directory holds.
pub struct Found {
    pub sets: Vec<FoundSet>,
    /// `.params` files that are no current set at a supported size (another release's).
    pub unknown: Vec<String>,
    /// Why nothing could be listed (no such directory), if so.
    pub unreadable: Option<String>,
}

/// Every current parameter set's file stem, with the sets it names (the PoSt kinds may share one).
fn known_stems() -> BTreeMap<String, Vec<ParamsId>> {
    let mut out: BTreeMap<String, Vec<ParamsId>> = BTreeMap::new();
    for kind in ProofKind::ALL {
        for size in SECTOR_SIZES {
            if let Ok(id) = registry::params_id(kind, size) {
                out.entry(id.stem.clone()).or_default().push(id);
            }
        }
    }
    out
}

/// The sets in `dir`, each checked; with `verify`, hashed too (progress on stderr).
pub fn scan(dir: &Path, verify: bool) -> Found {
    let names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".params"))
            .collect(),
        Err(e) => {
            return Found {
                sets: Vec::new(),
                unknown: Vec::new(),
                unreadable: Some(format!("{}: {e}", dir.display())),
            }
        }
    };
    let known = known_stems();
    let mut sets = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        let stem = name.trim_end_matches(".params");
        match known.get(stem) {
            Some(ids) => sets.extend(ids.iter().map(|id| check(dir, id, verify))),
            None => unknown.push(name),
        }
    }
    sets.sort_by_key(|s| (s.id.sector_size, s.id.kind.to_string()));
    unknown.sort();
    Found {
        sets,
        unknown,
        unreadable: None,
    }
}

fn check(dir: &Path, id: &ParamsId, verify: bool) -> FoundSet {
    let path = id.params_path(dir);
    let params_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let header = ParamsFile::open(&path)
        .map(|f| f.lengths())
        .map_err(|e| e.to_string());
    let has_vk = id.vk_path(dir).exists();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let origin = if param_digest::record_path(id, dir).exists() {
        "a test key (zkforge params generate), not the published file"
    } else if Manifest::published().get(&name).is_some() {
        "a name the published release lists"
    } else {
        "a name the published release does not list"
    };
    let verified = verify.then(|| {
        let mut files: Vec<PathBuf> = vec![path.clone()];
        if has_vk {
            files.push(id.vk_path(dir));
        }
        digests(&files)
    });
    FoundSet {
        id: id.clone(),
        params_bytes,
        header,
        has_vk,
        origin,
        verified,
    }
}

/// `params verify`'s check of each file: Ok with the verdicts, Err naming the first failure.
fn digests(files: &[PathBuf]) -> Result<String, String> {
    let mut verdicts = Vec::new();
    for path in files {
        eprintln!("hashing {} ...", path.display());
        let c = param_digest::check_file(path, Manifest::published(), &mut |_| {})
            .map_err(|e| format!("{e:#}"))?;
        if let Some(problem) = c.problem() {
            return Err(problem);
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        verdicts.push(format!(
            ".{ext} {}",
            match c.verdict {
                Verdict::Ok => "as published",
                Verdict::TestKey => "equal to its test-key record",
                _ => "not in the table (nothing to compare with)",
            }
        ));
    }
    Ok(verdicts.join(", "))
}
