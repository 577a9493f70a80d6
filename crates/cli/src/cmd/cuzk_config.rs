//! cuzk's configuration file read as zkforge's. `zkforge daemon --config cuzk.toml` takes the
//! file a provider runs Curio's cuzk daemon with (extern/cuzk, `cuzk.example.toml`), and
//! `zkforge config from-cuzk` prints the native file it amounts to.
//!
//! Every key cuzk knows gets an answer ([`Note`]): mapped to the zkforge key of the same
//! meaning, ignored (cuzk's deprecated keys, which cuzk ignores too), or named as having no
//! equivalent, with why. Two rules differ from cuzk's on purpose:
//! - a size or a duration that does not parse is an error: cuzk reads `"256G"` as 50 GiB and
//!   `"10min"` as 5 minutes, silently;
//! - a key cuzk does not know is an error, as in a native file: cuzk ignores a misspelt key,
//!   and a provider would never learn that `gpu_workers_per_devce = 1` did nothing.
//!
//! A key the file leaves out takes cuzk's default where that differs in effect from zkforge's
//! (the socket Curio dials, the parameter directory), else zkforge's. zkforge's own `[daemon]`
//! keys may stand beside cuzk's in its `[daemon]` table (cuzk ignores them), so that one file
//! serves both daemons: `insecure_remote` or TLS for cuzk's `0.0.0.0:9820`, say.

use std::fmt;

use anyhow::{bail, Context, Result};
use toml::{Table, Value};

use super::config::{Config, DaemonSection};
use super::cuzk_values::{boolean, count, cuzk_duration, cuzk_size, integers, quoted, string};

/// Where cuzk listens when its file names no address: the socket Curio's `[Cuzk] Address`
/// points at in Curio's documentation.
pub const CUZK_LISTEN: &str = "unix:///run/curio/cuzk.sock";
/// Where cuzk looks for parameters when its file names no directory.
pub const CUZK_PARAM_CACHE: &str = "/data/zk/params";

/// cuzk's tables besides `[daemon]`, which both daemons have.
const CUZK_ONLY_TABLES: [&str; 7] = [
    "srs",
    "memory",
    "gpus",
    "scheduler",
    "synthesis",
    "pipeline",
    "logging",
];

/// Log levels cuzk's `logging.level` takes.
const LOG_LEVELS: [&str; 5] = ["trace", "debug", "info", "warn", "error"];

/// Whether a parsed file is cuzk's: it has one of cuzk's own tables, or cuzk's
/// `daemon.status_listen`. (A file with only `[daemon] listen` reads the same either way.)
pub fn is_cuzk(file: &Table) -> bool {
    CUZK_ONLY_TABLES.iter().any(|t| file.contains_key(*t))
        || file
            .get("daemon")
            .and_then(Value::as_table)
            .is_some_and(|d| d.contains_key("status_listen"))
}

/// What one key of the file became.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// The zkforge key `native` set to `value` (as the native file writes it).
    Set { native: String, value: String },
    /// The daemon's log level, as `--log` sets it (no file key: logging starts before the file
    /// is read); `--log` and RUST_LOG win.
    LogLevel,
    /// Deprecated in cuzk and ignored there: ignored here too.
    Deprecated(&'static str),
    /// Nothing in zkforge does what it did.
    NoEquivalent(&'static str),
}

/// One key of a cuzk file and what it became, logged at start as one line.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    /// `table.key`, as in the file.
    pub key: String,
    /// The value as the file wrote it, or what cuzk's default was where the file left it out.
    pub value: String,
    /// True where the file left the key out and cuzk's default is what is mapped.
    pub defaulted: bool,
    pub effect: Effect,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Note { key, value, .. } = self;
        match self.defaulted {
            true => write!(
                f,
                "cuzk {key} (not in the file; cuzk's default {value}) -> "
            )?,
            false => write!(f, "cuzk {key} = {value} -> ")?,
        }
        match &self.effect {
            Effect::Set { native, value } => write!(f, "{native} = {value}"),
            Effect::LogLevel => write!(f, "the daemon's log level (as --log; RUST_LOG wins)"),
            Effect::Deprecated(why) => {
                write!(f, "ignored: deprecated in cuzk, which ignores it ({why})")
            }
            Effect::NoEquivalent(why) => write!(f, "no equivalent: {why}"),
        }
    }
}

/// A cuzk file read as zkforge's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Translation {
    pub config: Config,
    /// One per key of the file (and per cuzk default taken), in the file's table order.
    pub notes: Vec<Note>,
    /// `logging.level`, checked.
    pub log_level: Option<String>,
}

/// Reads a parsed cuzk file. Errors name the key and say what to write instead.
pub fn translate(file: Table) -> Result<Translation> {
    let mut r = Reader {
        file,
        config: Config::default(),
        notes: Vec::new(),
        log_level: None,
    };
    r.refuse_native_tables()?;
    r.daemon()?;
    r.srs()?;
    r.memory()?;
    r.gpus()?;
    r.scheduler()?;
    r.synthesis()?;
    r.pipeline()?;
    r.logging()?;
    r.refuse_leftovers()?;
    Ok(Translation {
        config: r.config,
        notes: r.notes,
        log_level: r.log_level,
    })
}

struct Reader {
    /// What is left of the file: each key is taken out as it is answered.
    file: Table,
    config: Config,
    notes: Vec<Note>,
    log_level: Option<String>,
}

impl Reader {
    fn refuse_native_tables(&self) -> Result<()> {
        for t in ["limits", "engine", "gpu"] {
            if self.file.contains_key(t) {
                bail!(
                    "[{t}] is a zkforge table in a cuzk file: a cuzk file may carry zkforge's \
                     [daemon] keys but no other zkforge table; convert it (zkforge config \
                     from-cuzk FILE) and edit the native file instead"
                );
            }
        }
        Ok(())
    }

    /// Takes `table.key` out of the file.
    fn take(&mut self, table: &str, key: &str) -> Result<Option<Value>> {
        match self.file.get_mut(table) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(t.remove(key)),
            Some(_) => bail!("{table} is not a table ([{table}])"),
        }
    }

    fn note(&mut self, key: &str, value: &Value, effect: Effect) {
        self.notes.push(Note {
            key: key.into(),
            value: value.to_string(),
            defaulted: false,
            effect,
        });
    }

    fn set(&mut self, key: &str, value: &Value, native: &str, native_value: String) {
        let effect = Effect::Set {
            native: native.into(),
            value: native_value,
        };
        self.note(key, value, effect);
    }

    fn daemon(&mut self) -> Result<()> {
        let listen = self.take("daemon", "listen")?;
        let status_listen = self.take("daemon", "status_listen")?;
        // What is left of [daemon] is zkforge's own keys, read as a native file reads them.
        let native = match self.file.remove("daemon") {
            Some(Value::Table(t)) => t,
            Some(_) => bail!("daemon is not a table ([daemon])"),
            None => Table::new(),
        };
        let keys: Vec<String> = native.keys().cloned().collect();
        self.config.daemon = Value::Table(native)
            .try_into::<DaemonSection>()
            .context("[daemon] of a cuzk file: a key neither cuzk nor zkforge has")?;
        let both = |ours: &str, theirs: &str| {
            anyhow::anyhow!("daemon.{ours} and cuzk's {theirs} both set the same thing: keep one")
        };
        for k in &keys {
            let v = toml::Value::try_from(&self.config.daemon)?
                .get(k)
                .map_or_else(String::new, Value::to_string);
            self.notes.push(Note {
                key: format!("daemon.{k}"),
                value: v.clone(),
                defaulted: false,
                effect: Effect::Set {
                    native: format!("daemon.{k} (zkforge's own key)"),
                    value: v,
                },
            });
        }
        match listen {
            Some(v) => {
                let s = string(&v, "daemon.listen")?;
                self.set("daemon.listen", &v, "daemon.listen", quoted(&s));
                self.config.daemon.listen = s;
            }
            None => {
                self.defaulted("daemon.listen", CUZK_LISTEN, "daemon.listen");
                self.config.daemon.listen = CUZK_LISTEN.into();
            }
        }
        if let Some(v) = status_listen {
            if keys.iter().any(|k| k == "http_listen") {
                return Err(both("http_listen", "daemon.status_listen"));
            }
            let s = string(&v, "daemon.status_listen")?;
            self.set("daemon.status_listen", &v, "daemon.http_listen", quoted(&s));
            self.config.daemon.http_listen = s;
        }
        if keys.iter().any(|k| k == "params") && self.file_has("srs", "param_cache") {
            return Err(both("params", "srs.param_cache"));
        }
        Ok(())
    }

    fn file_has(&self, table: &str, key: &str) -> bool {
        self.file
            .get(table)
            .and_then(Value::as_table)
            .is_some_and(|t| t.contains_key(key))
    }

    /// A cuzk default taken for a key the file left out.
    fn defaulted(&mut self, key: &str, value: &str, native: &str) {
        self.notes.push(Note {
            key: key.into(),
            value: quoted(value),
            defaulted: true,
            effect: Effect::Set {
                native: native.into(),
                value: quoted(value),
            },
        });
    }

    fn srs(&mut self) -> Result<()> {
        let native_params = !self.config.daemon.params.is_empty();
        match self.take("srs", "param_cache")? {
            Some(v) => {
                let s = string(&v, "srs.param_cache")?;
                self.set("srs.param_cache", &v, "daemon.params", quoted(&s));
                self.config.daemon.params = s;
            }
            None if native_params => {}
            None => {
                self.defaulted("srs.param_cache", CUZK_PARAM_CACHE, "daemon.params");
                self.config.daemon.params = CUZK_PARAM_CACHE.into();
            }
        }
        if let Some(v) = self.take("srs", "preload")? {
            let why = "sets load on demand; zkforge's daemon.preload loads named sets at start";
            self.note("srs.preload", &v, Effect::Deprecated(why));
        }
        Ok(())
    }

    fn memory(&mut self) -> Result<()> {
        let total = self.take("memory", "total_budget")?;
        let auto = match &total {
            Some(v) => {
                let s = string(v, "memory.total_budget")?;
                let native = match s.trim() {
                    "auto" => "auto".to_string(),
                    size => cuzk_size("memory.total_budget", size)?,
                };
                self.set(
                    "memory.total_budget",
                    v,
                    "engine.memory_budget",
                    quoted(&native),
                );
                self.config.engine.memory_budget = native;
                s.trim() == "auto"
            }
            None => true,
        };
        if let Some(v) = self.take("memory", "safety_margin")? {
            let size = cuzk_size("memory.safety_margin", &string(&v, "memory.safety_margin")?)?;
            if auto {
                // cuzk subtracts it from MemTotal, zkforge from MemAvailable at start: the same
                // margin leaves at least as much to the rest of the machine.
                self.set(
                    "memory.safety_margin",
                    &v,
                    "engine.memory_margin",
                    quoted(&size),
                );
                self.config.engine.memory_margin = size;
            } else {
                let why =
                    "cuzk uses it only with total_budget = \"auto\", and this file sets a size";
                self.note("memory.safety_margin", &v, Effect::NoEquivalent(why));
            }
        }
        if let Some(v) = self.take("memory", "eviction_min_idle")? {
            cuzk_duration("memory.eviction_min_idle", &v)?;
            let why = "zkforge evicts an idle parameter set only when the memory budget needs \
                       its room (least recently used first), never on a timer";
            self.note("memory.eviction_min_idle", &v, Effect::NoEquivalent(why));
        }
        for key in ["pinned_budget", "working_memory_budget"] {
            if let Some(v) = self.take("memory", key)? {
                let why = "one budget, memory.total_budget, covers everything";
                self.note(&format!("memory.{key}"), &v, Effect::Deprecated(why));
            }
        }
        Ok(())
    }

    fn gpus(&mut self) -> Result<()> {
        if let Some(v) = self.take("gpus", "devices")? {
            let ordinals = integers(&v, "gpus.devices")?;
            let native = match ordinals.is_empty() {
                true => "all".to_string(),
                false => ordinals
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            };
            self.set("gpus.devices", &v, "gpu.devices", quoted(&native));
            self.config.gpu.devices = native;
        }
        if let Some(v) = self.take("gpus", "gpu_threads")? {
            count(&v, "gpus.gpu_threads")?;
            let why = "zkforge's CUDA backend runs every MSM (G2 included) on the GPU and needs \
                       no CPU pool of its own (engine.prover_threads sizes the CPU backend's)";
            self.note("gpus.gpu_threads", &v, Effect::NoEquivalent(why));
        }
        if let Some(v) = self.take("gpus", "gpu_workers_per_device")? {
            let n = count(&v, "gpus.gpu_workers_per_device")?;
            let native = "engine.prover_workers_per_device";
            self.set("gpus.gpu_workers_per_device", &v, native, n.to_string());
            self.config.engine.prover_workers_per_device = n as usize;
        }
        Ok(())
    }

    fn scheduler(&mut self) -> Result<()> {
        let keys: [(&str, &'static str); 3] = [
            (
                "max_batch_size",
                "zkforge proves partition by partition and never batches sectors; several \
                 jobs' partitions are in flight at once as the memory budget allows",
            ),
            (
                "max_batch_wait_ms",
                "there is no batch to fill: nothing waits before it is synthesized",
            ),
            (
                "sort_by_type",
                "zkforge's queue is ordered by priority, then age; parameter sets stay \
                 resident while the memory budget holds them, so a switch reloads nothing",
            ),
        ];
        for (key, why) in keys {
            if let Some(v) = self.take("scheduler", key)? {
                match key {
                    "sort_by_type" => boolean(&v, "scheduler.sort_by_type").map(drop)?,
                    _ => count(&v, &format!("scheduler.{key}")).map(drop)?,
                }
                self.note(&format!("scheduler.{key}"), &v, Effect::NoEquivalent(why));
            }
        }
        Ok(())
    }

    fn synthesis(&mut self) -> Result<()> {
        if let Some(v) = self.take("synthesis", "threads")? {
            let n = count(&v, "synthesis.threads")?;
            self.set(
                "synthesis.threads",
                &v,
                "engine.synthesis_threads",
                n.to_string(),
            );
            self.config.engine.synthesis_threads = n as usize;
        }
        if let Some(v) = self.take("synthesis", "partition_workers")? {
            let why = "the memory budget sets how many partitions are synthesized at once";
            self.note("synthesis.partition_workers", &v, Effect::Deprecated(why));
        }
        Ok(())
    }

    fn pipeline(&mut self) -> Result<()> {
        if let Some(v) = self.take("pipeline", "enabled")? {
            let why = match boolean(&v, "pipeline.enabled")? {
                true => "zkforge always overlaps synthesis and proving, as this asks",
                false => "zkforge always overlaps synthesis and proving; false is not honoured",
            };
            self.note("pipeline.enabled", &v, Effect::NoEquivalent(why));
        }
        if let Some(v) = self.take("pipeline", "synthesis_lookahead")? {
            count(&v, "pipeline.synthesis_lookahead")?;
            let why = "cuzk counts whole proofs and scales it with its budget; zkforge bounds \
                       synthesized partitions waiting for a prover (engine.prove_queue_depth, \
                       set from pipeline.max_gpu_queue_depth)";
            self.note(
                "pipeline.synthesis_lookahead",
                &v,
                Effect::NoEquivalent(why),
            );
        }
        if let Some(v) = self.take("pipeline", "synthesis_concurrency")? {
            count(&v, "pipeline.synthesis_concurrency")?;
            let why = "zkforge synthesizes partitions, not proofs: as many at once as \
                       engine.synthesis_workers (set from pipeline.max_parallel_synthesis) and \
                       the memory budget allow";
            self.note(
                "pipeline.synthesis_concurrency",
                &v,
                Effect::NoEquivalent(why),
            );
        }
        if let Some(v) = self.take("pipeline", "max_parallel_synthesis")? {
            // cuzk: 0 means its default of 18; zkforge's "auto" is one per core with a GPU.
            let n = count(&v, "pipeline.max_parallel_synthesis")?;
            let native = match n {
                0 => "\"auto\"".to_string(),
                n => n.to_string(),
            };
            self.set(
                "pipeline.max_parallel_synthesis",
                &v,
                "engine.synthesis_workers",
                native,
            );
            self.config.engine.synthesis_workers = n as usize;
        }
        if let Some(v) = self.take("pipeline", "slot_size")? {
            count(&v, "pipeline.slot_size")?;
            let why = "zkforge always pipelines partition by partition; the memory budget \
                       bounds how many are in flight";
            self.note("pipeline.slot_size", &v, Effect::NoEquivalent(why));
        }
        if let Some(v) = self.take("pipeline", "max_gpu_queue_depth")? {
            let n = count(&v, "pipeline.max_gpu_queue_depth")?;
            if n == 0 {
                let why = "0 is cuzk's \"no throttle\"; zkforge always bounds synthesized \
                           partitions waiting for a prover (engine.prove_queue_depth, default 2)";
                self.note(
                    "pipeline.max_gpu_queue_depth",
                    &v,
                    Effect::NoEquivalent(why),
                );
            } else {
                let native = "engine.prove_queue_depth";
                self.set("pipeline.max_gpu_queue_depth", &v, native, n.to_string());
                self.config.engine.prove_queue_depth = n as usize;
            }
        }
        Ok(())
    }

    fn logging(&mut self) -> Result<()> {
        if let Some(v) = self.take("logging", "level")? {
            let level = string(&v, "logging.level")?.to_ascii_lowercase();
            if !LOG_LEVELS.contains(&level.as_str()) {
                bail!("logging.level = {v}: not one of {}", LOG_LEVELS.join(", "));
            }
            self.note("logging.level", &v, Effect::LogLevel);
            self.log_level = Some(level);
        }
        if let Some(v) = self.take("logging", "format")? {
            string(&v, "logging.format")?;
            let why = "zkforge logs lines of text; its TIMELINE events are the structured \
                       record (zkforge timeline)";
            self.note("logging.format", &v, Effect::NoEquivalent(why));
        }
        Ok(())
    }

    /// Whatever is left is a key neither daemon knows.
    fn refuse_leftovers(&self) -> Result<()> {
        for (table, value) in &self.file {
            let Value::Table(t) = value else {
                bail!("{table} = {value}: not a cuzk table or key");
            };
            if !CUZK_ONLY_TABLES.contains(&table.as_str()) {
                bail!("[{table}]: not a table of cuzk's (nor of zkforge's)");
            }
            if let Some(key) = t.keys().next() {
                bail!(
                    "{table}.{key}: not a key of cuzk's (cuzk ignores it silently, so it did \
                     nothing there either); remove it or fix its spelling"
                );
            }
        }
        Ok(())
    }
}

/// The native file a translation amounts to: zkforge's TOML with, above each key a cuzk key
/// set, the cuzk line it came from, and the cuzk keys that set nothing listed at the top.
pub fn native_toml(t: &Translation) -> String {
    let mut out = String::from(
        "# zkforge configuration converted from a cuzk file (zkforge config from-cuzk).\n",
    );
    let unmapped: Vec<&Note> = t
        .notes
        .iter()
        .filter(|n| !matches!(n.effect, Effect::Set { .. }))
        .collect();
    if !unmapped.is_empty() {
        out.push_str("# cuzk keys that set no zkforge key:\n");
        for n in unmapped {
            out.push_str(&format!("#   {n}\n"));
        }
    }
    if let Some(level) = &t.log_level {
        out.push_str(&format!(
            "# The log level has no file key: run the daemon with --log {level}\n"
        ));
    }
    let mut table = String::new();
    for line in t.config.to_toml().lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            table = name.to_string();
        } else if let Some((key, _)) = line.split_once(" = ") {
            let native = format!("{table}.{key}");
            for n in &t.notes {
                if let Effect::Set { native: to, .. } = &n.effect {
                    if to.split(' ').next() == Some(native.as_str()) {
                        out.push_str(&format!("# {n}\n"));
                    }
                }
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "cuzk_config_tests.rs"]
mod tests;
