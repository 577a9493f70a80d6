//! ARCHITECTURE.md's invariants, checked: which crate may depend on which (`cargo metadata`),
//! and where threads, locks, files, gRPC status codes and proofs are made (a scan of the
//! sources, test code left out). Each test is one statement of the map and names it when it
//! fails: either the change broke the architecture, or the map and this file change together,
//! on purpose. It compiles nothing (a `cargo metadata --no-deps` and a read of the sources):
//! it adds under a second to CI.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---------------------------------------------------------------------------------------------
// The crate graph

/// What each workspace crate depends on: its normal and build dependencies, optional ones
/// included (a feature may turn them on); dev-dependencies left out (tests and benchmarks may
/// use anything).
struct Graph(BTreeMap<String, BTreeSet<String>>);

impl Graph {
    /// `cargo metadata --no-deps`: the manifests alone, no resolution, no network.
    fn read() -> Self {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(root())
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let packages = meta["packages"].as_array().expect("packages");
        let deps = packages
            .iter()
            .map(|p| {
                let name = p["name"].as_str().expect("name").to_string();
                let deps = p["dependencies"]
                    .as_array()
                    .expect("dependencies")
                    .iter()
                    .filter(|d| d["kind"].as_str() != Some("dev"))
                    .map(|d| d["name"].as_str().expect("name").to_string())
                    .collect();
                (name, deps)
            })
            .collect();
        Self(deps)
    }

    fn direct(&self, krate: &str) -> &BTreeSet<String> {
        self.0
            .get(krate)
            .unwrap_or_else(|| panic!("no crate {krate}"))
    }

    /// Every crate `krate` reaches through the workspace's crates (external crates as leaves:
    /// what they depend on is theirs).
    fn reach(&self, krate: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![krate.to_string()];
        while let Some(k) = todo.pop() {
            for d in self.0.get(&k).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    }

    fn zkforge_reach(&self, krate: &str) -> BTreeSet<String> {
        let reach = self.reach(krate);
        reach
            .into_iter()
            .filter(|c| c.starts_with("zkforge-"))
            .collect()
    }
}

/// Each crate, the zkforge crates it may reach, and the map's line that says so.
const LAYERS: &[(&str, &[&str], &str)] = &[
    (
        "zkforge-groth16",
        &[],
        "groth16 depends on no zkforge crate",
    ),
    (
        "zkforge-timeline",
        &[],
        "timeline depends on no zkforge crate",
    ),
    (
        "zkforge-circuits",
        &["zkforge-groth16"],
        "circuits builds on groth16 alone",
    ),
    (
        "zkforge-cuda",
        &["zkforge-groth16"],
        "cuda builds on groth16 alone",
    ),
    (
        "zkforge-engine",
        &["zkforge-circuits", "zkforge-groth16", "zkforge-timeline"],
        "the engine builds on circuits, groth16 and timeline alone",
    ),
    (
        "zkforge-server",
        &[
            "zkforge-engine",
            "zkforge-filecoin",
            "zkforge-circuits",
            "zkforge-groth16",
            "zkforge-timeline",
        ],
        "the server builds on the engine, filecoin and what they build on (no backend)",
    ),
];

#[test]
fn each_crate_builds_on_what_the_map_says() {
    let g = Graph::read();
    let wrong: Vec<String> = LAYERS
        .iter()
        .filter_map(|(krate, allowed, line)| {
            let reach = g.zkforge_reach(krate);
            let extra: Vec<_> = reach
                .iter()
                .filter(|c| !allowed.contains(&c.as_str()))
                .collect();
            (!extra.is_empty()).then(|| format!("{line}; {krate} reaches {extra:?}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md, Layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_engine_knows_not_the_wire() {
    let g = Graph::read();
    let zk = g.zkforge_reach("zkforge-engine");
    // The wire's crates, named by the engine or a zkforge crate it builds on.
    for krate in zk.iter().map(String::as_str).chain(["zkforge-engine"]) {
        let wire: Vec<_> = ["tonic", "prost", "hyper", "axum", "http"]
            .into_iter()
            .filter(|w| g.direct(krate).contains(*w))
            .collect();
        assert!(
            wire.is_empty(),
            "ARCHITECTURE.md: the engine knows not the wire; {krate} depends on {wire:?}"
        );
    }
}

#[test]
fn fixtures_is_in_no_graph_but_the_clis_and_the_daemons_code_never_names_it() {
    let g = Graph::read();
    let fixtures = "zkforge-fixtures";
    let holders: Vec<&String> =
        g.0.keys()
            .filter(|k| *k != fixtures && g.reach(k).contains(fixtures))
            .collect();
    assert_eq!(
        holders,
        ["zkforge-cli"],
        "ARCHITECTURE.md: {fixtures} is in no crate's dependencies but the CLI's"
    );
    // Within the CLI: the files that name it, and none that the daemon command reaches.
    let naming: BTreeSet<String> = sources("cli")
        .into_iter()
        .filter(|(_, code)| uses(code, "zkforge_fixtures"))
        .map(|(path, _)| path)
        .collect();
    let allowed = [
        "cmd/demo.rs",
        "cmd/fixtures.rs",
        "cmd/bench_client/input.rs",
        "progress.rs",
    ];
    assert_eq!(
        naming,
        allowed.iter().map(|s| s.to_string()).collect(),
        "ARCHITECTURE.md: the CLI names zkforge_fixtures in {allowed:?} only"
    );
    on_the_map(&allowed);
    let daemon = modules_reached("cmd/daemon.rs");
    for (path, code) in sources("cli").iter().filter(|(p, _)| daemon.contains(p)) {
        for other in ["zkforge_fixtures", "zkforge_bench_client"] {
            assert!(
                !uses(code, other),
                "ARCHITECTURE.md: the daemon's code never names {other}; cli/src/{path} (reached \
                 from cmd/daemon.rs) does"
            );
        }
    }
    assert!(
        daemon.contains("cmd/config.rs"),
        "the walk follows `super::`: {daemon:?}"
    );
}

#[test]
fn bellperson_is_a_reference_for_tests_only() {
    let g = Graph::read();
    let naming: Vec<&String> =
        g.0.iter()
            .filter(|(_, d)| d.contains("bellperson"))
            .map(|(k, _)| k)
            .collect();
    assert!(
        naming.is_empty(),
        "ARCHITECTURE.md: bellperson is a dev-dependency only; {naming:?} depend on it"
    );
}

// ---------------------------------------------------------------------------------------------
// The sources

/// A crate's product sources: `src/**/*.rs` as (path under `src/`, code) with comments cut and
/// test code left out: files of tests (`tests.rs`, `test_*.rs`, `*_tests.rs`, anything in a
/// `tests/` folder) and inline test modules.
fn sources(krate: &str) -> Vec<(String, String)> {
    let src = root().join("crates").join(krate).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&src).ok()?.to_str()?.to_string();
            let stem = file.file_stem()?.to_str()?;
            let test = stem == "tests"
                || stem.starts_with("test_")
                || stem.ends_with("_tests")
                || rel.split('/').any(|part| part == "tests");
            let text = std::fs::read_to_string(&file).ok()?;
            (!test).then(|| (rel, product_code(&text)))
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `text` without comments (from `//` to the line's end) and without its inline test modules
/// (from a `#[cfg(test)]` before `mod name {` to the brace that closes it).
fn product_code(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect();
    let mut code = String::new();
    let mut depth: Option<i64> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(d) = depth.as_mut() {
            *d += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if *d <= 0 && line.contains('}') {
                depth = None;
            }
            continue;
        }
        let next = lines[i + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty());
        if line.trim() == "#[cfg(test)]"
            && next.is_some_and(|n| n.starts_with("mod ") && n.ends_with('{'))
        {
            depth = Some(0);
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Whether `code` names `what` (`Mutex`, `thread::spawn`) as the start of a path or
/// identifier: `PriorityLock` is no `Lock`, `MutexGuard` is a `Mutex`.
fn uses(code: &str, what: &str) -> bool {
    code.match_indices(what).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Whether `path` is in one of `rooms` (a folder ends in `/`).
fn in_rooms(path: &str, rooms: &[&str]) -> bool {
    rooms.iter().any(|r| match r.ends_with('/') {
        true => path.starts_with(r),
        false => path == *r,
    })
}

/// Every room a test allows is named on the map, and still there: a room renamed or gone is
/// renamed or struck on the map too.
fn on_the_map(rooms: &[&str]) {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for room in rooms {
        assert!(map.contains(room), "ARCHITECTURE.md does not name `{room}`");
    }
}

/// The CLI's files `start` reaches through `super::x` and `crate::x` (paths under `src/`).
fn modules_reached(start: &str) -> BTreeSet<String> {
    let src = root().join("crates/cli/src");
    let code: BTreeMap<String, String> = sources("cli").into_iter().collect();
    let mut seen = BTreeSet::from([start.to_string()]);
    let mut todo = vec![start.to_string()];
    while let Some(file) = todo.pop() {
        let dir = Path::new(&file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let text = code.get(&file).map(String::as_str).unwrap_or("");
        for (prefix, base) in [
            ("super::", dir.clone()),
            ("crate::cmd::", "cmd".into()),
            ("crate::", PathBuf::new()),
        ] {
            for (at, _) in text.match_indices(prefix) {
                let name: String = text[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                for candidate in [
                    base.join(format!("{name}.rs")),
                    base.join(&name).join("mod.rs"),
                ] {
                    let rel = candidate.to_string_lossy().into_owned();
                    if src.join(&rel).is_file() && seen.insert(rel.clone()) {
                        todo.push(rel);
                    }
                }
            }
        }
    }
    seen
}

/// What a crate may hold where: the rooms (under `src/`) of its threads of its own (spawned,
/// scoped, or a pool built), its locks, and its files; `None`: anywhere. ARCHITECTURE.md,
/// "Threads, locks and files", is this table.
struct Rooms {
    krate: &'static str,
    threads: Option<&'static [&'static str]>,
    locks: Option<&'static [&'static str]>,
    files: Option<&'static [&'static str]>,
}

const ROOMS: &[Rooms] = &[
    Rooms {
        krate: "groth16",
        threads: Some(&["exec/", "synthesis/assignment.rs", "prover/cpu.rs"]),
        locks: Some(&["exec/", "synthesis/assignment.rs"]),
        files: Some(&[
            "exec/",
            "r1cs/file.rs",
            "srs/params_file.rs",
            "srs/read.rs",
            "srs/write.rs",
            "generator/stream.rs",
        ]),
    },
    Rooms {
        krate: "circuits",
        threads: Some(&[]),
        locks: Some(&[]),
        files: Some(&[]),
    },
    Rooms {
        krate: "timeline",
        threads: Some(&[]),
        locks: Some(&[]),
        files: Some(&[]),
    },
    Rooms {
        krate: "filecoin",
        threads: Some(&["param_digest.rs"]),
        locks: Some(&["native/"]),
        files: Some(&["params.rs", "param_digest.rs"]),
    },
    Rooms {
        krate: "engine",
        threads: Some(&["engine.rs", "workers.rs"]),
        locks: None,
        files: Some(&["config.rs", "host_memory.rs", "params_source.rs"]),
    },
    Rooms {
        krate: "cuda",
        threads: Some(&["backend/"]),
        locks: None,
        files: Some(&[]),
    },
    Rooms {
        krate: "server",
        threads: Some(&[]),
        locks: None,
        files: Some(&["access.rs", "serve.rs"]),
    },
];

const THREADS: &[&str] = &[
    "thread::spawn",
    "thread::Builder",
    "thread::scope",
    "ThreadPoolBuilder",
    "rayon::spawn",
    "rayon::scope",
];
const LOCKS: &[&str] = &["Mutex", "RwLock", "Condvar"];
const FILES: &[&str] = &["fs::", "File::", "OpenOptions", "Mmap"];

#[test]
fn threads_locks_and_files_live_where_the_map_says() {
    let mut wrong = Vec::new();
    for rooms in ROOMS {
        let sources = sources(rooms.krate);
        let kinds = [
            ("threads", rooms.threads, THREADS),
            ("locks", rooms.locks, LOCKS),
            ("files", rooms.files, FILES),
        ];
        for (what, allowed, needles) in kinds {
            let Some(allowed) = allowed else { continue };
            on_the_map(allowed);
            for (path, code) in &sources {
                if let Some(n) = needles.iter().find(|n| uses(code, n)) {
                    if !in_rooms(path, allowed) {
                        wrong.push(format!(
                            "{}/src/{path} holds {what} ({n}); the map's rooms for them: {allowed:?}",
                            rooms.krate
                        ));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md, Threads, locks and files:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn status_codes_are_minted_in_server_status_rs() {
    let minting: Vec<String> = sources("server")
        .into_iter()
        .filter(|(path, code)| {
            path != "status.rs" && (uses(code, "Status::") || uses(code, "Code::"))
        })
        .map(|(path, _)| path)
        .collect();
    assert!(
        minting.is_empty(),
        "ARCHITECTURE.md: gRPC status codes are minted in server/src/status.rs alone; \
         server/src/{minting:?} mint their own (add a function to status.rs)"
    );
}

#[test]
fn a_proof_is_made_in_the_engines_prover_loop_alone() {
    let crates = [
        "circuits", "cli", "cuda", "engine", "filecoin", "fixtures", "server", "timeline",
    ];
    let making: Vec<String> = crates
        .iter()
        .flat_map(|k| {
            sources(k)
                .into_iter()
                .map(move |(p, code)| (format!("{k}/src/{p}"), code))
        })
        .filter(|(_, code)| uses(code, "prove_on("))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(
        making,
        ["engine/src/workers.rs"],
        "ARCHITECTURE.md: a proof's bytes are made in one place in the product, the engine's \
         prover loop (groth16::prover::prove_on)"
    );
}
