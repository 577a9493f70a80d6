//! scripts/install.sh, checked without root and without touching the system: it parses (and
//! passes shellcheck where shellcheck is installed); the config a fresh install writes
//! (`--print-config`) is the packaged one (packaging.rs checks that one) with only the lines
//! that could not start on this host as built changed, and the daemon accepts it; and the unit
//! drop-in for another prefix or user (`--print-dropin`) starts the packaged unit's command.
//! The install itself was run as root on the development machine (docs/operations.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{run_ok, run_said, zkforge};

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn script() -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(repo_file("scripts/install.sh"));
    cmd
}

/// `[section] key = value` of a TOML text, flattened to "section.key".
fn toml_keys(text: &str) -> BTreeMap<String, toml::Value> {
    let doc: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut keys = BTreeMap::new();
    for (section, table) in doc {
        for (key, value) in table.as_table().unwrap() {
            keys.insert(format!("{section}.{key}"), value.clone());
        }
    }
    keys
}

fn mem_total_bytes() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("MemTotal");
    kib << 10
}

#[test]
fn the_script_parses_and_passes_shellcheck_where_installed() {
    let path = repo_file("scripts/install.sh");
    run_ok(Command::new("bash").arg("-n").arg(&path));
    // Not every machine has shellcheck (CI's may not): where it is, its findings fail.
    if Command::new("shellcheck").arg("--version").output().is_ok() {
        run_ok(Command::new("shellcheck").arg(&path));
    }
}

/// The config `install.sh [args] --print-config` renders, checked against the packaged one:
/// every key the same but `changed`, and accepted by `zkforge config print`. Returns its keys.
fn rendered_config(args: &[&str]) -> BTreeMap<String, toml::Value> {
    let text = run_ok(script().args(args).arg("--print-config"));
    let rendered = toml_keys(&text);
    let packaged =
        toml_keys(&std::fs::read_to_string(repo_file("packaging/zkforge.toml")).unwrap());
    assert_eq!(
        rendered.keys().collect::<Vec<_>>(),
        packaged.keys().collect::<Vec<_>>()
    );
    let budget = |k: &BTreeMap<String, toml::Value>| {
        let b = k["engine.memory_budget"].as_str().unwrap().to_string();
        zkforge_engine::parse_bytes(&b).unwrap()
    };
    // The packaged budget stays where the machine holds it; else it becomes one that fits.
    if budget(&packaged) <= mem_total_bytes() {
        assert_eq!(budget(&rendered), budget(&packaged));
    } else {
        assert!(budget(&rendered) <= mem_total_bytes(), "{text}");
    }
    for (key, value) in &packaged {
        if key != "daemon.backend" && key != "engine.memory_budget" {
            assert_eq!(&rendered[key], value, "{key}");
        }
    }
    // Each change says so in the file, on the line above it.
    let lines: Vec<&str> = text.lines().collect();
    for (key, line) in [
        ("daemon.backend", "backend = "),
        ("engine.memory_budget", "memory_budget = "),
    ] {
        if rendered[key] != packaged[key] {
            let at = lines.iter().position(|l| l.starts_with(line)).unwrap();
            assert!(lines[at - 1].starts_with("# install.sh: "), "{key}: {text}");
        }
    }
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("zkforge.toml");
    std::fs::write(&path, &text).unwrap();
    let effective = run_ok(zkforge().args(["config", "print", "--config"]).arg(&path));
    assert_eq!(
        toml_keys(&effective)["daemon.backend"],
        rendered["daemon.backend"]
    );
    rendered
}

#[test]
fn a_fresh_install_writes_the_packaged_config_adapted_to_the_build() {
    // Without --cuda the binary refuses backend = "cuda" at start: the config says "cpu".
    let cpu = rendered_config(&[]);
    assert_eq!(cpu["daemon.backend"].as_str(), Some("cpu"));
    // With --cuda it is the packaged "cuda".
    let cuda = rendered_config(&["--cuda"]);
    assert_eq!(cuda["daemon.backend"].as_str(), Some("cuda"));
}

/// The packaged unit's `Key=value` for a key set once.
fn unit_value(unit: &str, key: &str) -> String {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in the unit"))
        .to_string()
}

#[test]
fn the_dropin_points_the_packaged_unit_at_another_prefix_and_user() {
    let unit = std::fs::read_to_string(repo_file("packaging/zkforge.service")).unwrap();
    let exec = unit_value(&unit, "ExecStart");
    let (bin, args) = exec.split_once(' ').unwrap();
    // The packaged prefix and user need none.
    let user = unit_value(&unit, "User");
    let prefix = bin.strip_suffix("/bin/zkforge").unwrap();
    let none = run_ok(script().args(["--print-dropin", "--prefix", prefix, "--user", &user]));
    assert_eq!(none, "");
    let dropin =
        run_ok(script().args(["--print-dropin", "--prefix", "/opt/zk/", "--user", "prover"]));
    let lines: Vec<&str> = dropin.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        [
            "[Service]".to_string(),
            "ExecStart=".into(),
            format!("ExecStart=/opt/zk/bin/zkforge {args}"),
            "User=prover".into(),
            "Group=prover".into(),
        ]
    );
    let (out, said) = run_said(script().args(["--print-dropin", "--prefix", "opt/zk"]));
    assert!(!out.status.success());
    assert!(said.contains("not an absolute path"), "{said}");
}
