//! Keys for synthetic circuits, generated once and cached on disk.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use rand::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::generator::generate_random_keys;
use zkforge_groth16::{ProvingKey, ReadOptions};

use crate::progress::WorkBar;

pub use zkforge_filecoin::params::zkforge_cache_dir as default_cache_dir;

/// Loads the cached key for `circuit`, or generates and caches it.
pub fn synthetic_key(circuit: &SyntheticCircuit, cache: &Path) -> anyhow::Result<ProvingKey> {
    let path = cache.join(format!("{}.params", circuit.stem()));
    if path.exists() {
        let t = Instant::now();
        match ProvingKey::read_file(&path, ReadOptions::default()) {
            Ok(pk) => {
                tracing::info!(path = %path.display(), ms = t.elapsed().as_millis(), "loaded cached key");
                return Ok(pk);
            }
            Err(e) => tracing::warn!("ignoring unreadable cached key: {e}"),
        }
    }
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    let t = Instant::now();
    let bar = WorkBar::new("generating test keys");
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let pk = generate_random_keys(circuit.clone(), &mut rng, &bar)?;
    bar.finish();
    tracing::info!(secs = t.elapsed().as_secs_f64(), "generated keys");
    pk.write_file(&path)?;
    Ok(pk)
}

/// One key for every request, handed to an engine by the benchmarks.
pub struct OneKey(pub std::sync::Arc<ProvingKey>);

impl zkforge_engine::ParamsSource for OneKey {
    fn load(&self, _: &zkforge_circuits::ParamsId) -> anyhow::Result<ProvingKey> {
        Ok((*self.0).clone())
    }

    fn size_hint(&self, _: &zkforge_circuits::ParamsId) -> anyhow::Result<u64> {
        Ok(self.0.heap_bytes() as u64)
    }
}
