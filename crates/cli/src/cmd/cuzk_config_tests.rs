use super::*;

fn read(text: &str) -> Result<Translation> {
    translate(text.parse::<Table>().unwrap())
}

fn err(text: &str) -> String {
    format!("{:#}", read(text).unwrap_err())
}

fn note<'a>(t: &'a Translation, key: &str) -> &'a Note {
    t.notes
        .iter()
        .find(|n| n.key == key)
        .unwrap_or_else(|| panic!("no note for {key}: {:#?}", t.notes))
}

#[test]
fn a_cuzk_file_is_told_from_a_native_one() {
    let table = |s: &str| s.parse::<Table>().unwrap();
    assert!(is_cuzk(&table("[srs]\nparam_cache = \"/p\"\n")));
    assert!(is_cuzk(&table("[daemon]\nstatus_listen = \"\"\n")));
    assert!(!is_cuzk(&table(
        "[daemon]\nlisten = \"127.0.0.1:1\"\n[engine]\n"
    )));
    assert!(!is_cuzk(&table("")));
}

#[test]
fn sizes_cuzk_misreads_are_errors() {
    assert_eq!(cuzk_size("k", "256GiB").unwrap(), "256GiB");
    assert_eq!(cuzk_size("k", " 626 MiB ").unwrap(), "626MiB");
    assert_eq!(cuzk_size("k", "64GB").unwrap(), "64000000000");
    assert_eq!(cuzk_size("k", "512MB").unwrap(), "512000000");
    assert_eq!(cuzk_size("k", "1000").unwrap(), "1000");
    assert_eq!(cuzk_size("k", "1TiB").unwrap(), "1TiB");
    for bad in ["256G", "256gb", "lots", "", "-5GiB", "1.5GiB"] {
        let e = format!("{:#}", cuzk_size("memory.total_budget", bad).unwrap_err());
        assert!(
            e.contains("memory.total_budget") && e.contains(&format!("{bad:?}")),
            "{bad}: {e}"
        );
    }
    let e = err("[memory]\ntotal_budget = \"256G\"\n");
    assert!(
        e.contains("\"256G\" is not a size") && e.contains("50 GiB"),
        "{e}"
    );
    let e = err("[memory]\neviction_min_idle = \"10min\"\n");
    assert!(
        e.contains("memory.eviction_min_idle") && e.contains("not a duration"),
        "{e}"
    );
}

#[test]
fn keys_map_to_their_zkforge_meaning() {
    let t = read(
        "[gpus]\ndevices = [0, 2]\ngpu_workers_per_device = 3\n\
         [memory]\ntotal_budget = \"auto\"\nsafety_margin = \"8GiB\"\n\
         [synthesis]\nthreads = 12\n\
         [pipeline]\nmax_parallel_synthesis = 6\nmax_gpu_queue_depth = 8\n\
         [daemon]\nstatus_listen = \"127.0.0.1:9821\"\n",
    )
    .unwrap();
    let c = &t.config;
    assert_eq!(c.gpu.devices, "0,2");
    assert_eq!(c.engine.prover_workers_per_device, 3);
    assert_eq!(c.engine.memory_budget, "auto");
    assert_eq!(c.engine.memory_margin, "8GiB");
    assert_eq!(c.engine.synthesis_threads, 12);
    assert_eq!(c.engine.synthesis_workers, 6);
    assert_eq!(c.engine.prove_queue_depth, 8);
    assert_eq!(c.daemon.http_listen, "127.0.0.1:9821");
    // Left out: cuzk's socket and parameter directory, which Curio's setup relies on.
    assert_eq!(c.daemon.listen, CUZK_LISTEN);
    assert_eq!(c.daemon.params, CUZK_PARAM_CACHE);
    assert_eq!(
        note(&t, "gpus.gpu_workers_per_device").to_string(),
        "cuzk gpus.gpu_workers_per_device = 3 -> engine.prover_workers_per_device = 3"
    );
    assert_eq!(
        note(&t, "daemon.listen").to_string(),
        format!(
            "cuzk daemon.listen (not in the file; cuzk's default \"{CUZK_LISTEN}\") -> \
             daemon.listen = \"{CUZK_LISTEN}\""
        )
    );
    // A size with a budget set by hand: the margin is cuzk's "auto" only.
    let t = read("[memory]\ntotal_budget = \"64GB\"\nsafety_margin = \"5GiB\"\n").unwrap();
    assert_eq!(t.config.engine.memory_budget, "64000000000");
    assert_eq!(t.config.engine.memory_margin, "auto");
    assert!(matches!(
        note(&t, "memory.safety_margin").effect,
        Effect::NoEquivalent(_)
    ));
}

#[test]
fn deprecated_and_unmatched_keys_are_named_and_ignored() {
    let t = read(
        "[srs]\npreload = [\"porep-32g\"]\n[memory]\npinned_budget = \"50GiB\"\n\
         working_memory_budget = \"80GiB\"\n[synthesis]\npartition_workers = 12\n\
         [scheduler]\nmax_batch_size = 3\n[logging]\nlevel = \"DEBUG\"\nformat = \"json\"\n",
    )
    .unwrap();
    for key in [
        "srs.preload",
        "memory.pinned_budget",
        "memory.working_memory_budget",
        "synthesis.partition_workers",
    ] {
        let n = note(&t, key);
        assert!(matches!(n.effect, Effect::Deprecated(_)), "{n}");
        assert!(n.to_string().contains("ignored: deprecated in cuzk"), "{n}");
    }
    let n = note(&t, "scheduler.max_batch_size").to_string();
    assert!(
        n.contains("= 3 -> no equivalent: zkforge proves partition by partition"),
        "{n}"
    );
    assert!(matches!(
        note(&t, "logging.format").effect,
        Effect::NoEquivalent(_)
    ));
    assert_eq!(t.log_level.as_deref(), Some("debug"));
    // Nothing of the engine moved.
    let mut expected = Config::default();
    expected.daemon.listen = CUZK_LISTEN.into();
    expected.daemon.params = CUZK_PARAM_CACHE.into();
    assert_eq!(t.config, expected);
}

#[test]
fn bad_keys_and_values_are_named() {
    let e = err("[gpus]\ngpu_workers_per_devce = 1\n");
    assert!(
        e.contains("gpus.gpu_workers_per_devce") && e.contains("not a key of cuzk's"),
        "{e}"
    );
    let e = err("[gpus]\ngpu_workers_per_device = \"2\"\n");
    assert!(
        e.contains("gpus.gpu_workers_per_device") && e.contains("whole number"),
        "{e}"
    );
    let e = err("[gpus]\ndevices = [-1]\n");
    assert!(e.contains("gpus.devices"), "{e}");
    let e = err("[srs]\n[engine]\nverify_proofs = false\n");
    assert!(e.contains("[engine] is a zkforge table"), "{e}");
    let e = err("[srs]\n[schedular]\n");
    assert!(e.contains("[schedular]"), "{e}");
    let e = err("[daemon]\nlisen = \"x\"\n[srs]\n");
    assert!(e.contains("lisen"), "{e}");
    let e = err("[logging]\nlevel = \"loud\"\n");
    assert!(
        e.contains("logging.level") && e.contains("trace, debug"),
        "{e}"
    );
    let e = err("[daemon]\nstatus_listen = \"\"\nhttp_listen = \"\"\n");
    assert!(
        e.contains("daemon.http_listen and cuzk's daemon.status_listen"),
        "{e}"
    );
}

#[test]
fn zkforge_daemon_keys_stand_beside_cuzk_ones() {
    let t = read("[daemon]\nlisten = \"0.0.0.0:9820\"\ninsecure_remote = true\n[srs]\n").unwrap();
    assert!(t.config.daemon.insecure_remote);
    assert_eq!(t.config.daemon.listen, "0.0.0.0:9820");
    assert!(t.config.check().is_ok(), "{:?}", t.config.check());
    let n = note(&t, "daemon.insecure_remote").to_string();
    assert!(n.contains("(zkforge's own key)"), "{n}");
}

#[test]
fn the_native_file_comments_each_key_and_reads_back() {
    let t = read("[gpus]\ngpu_workers_per_device = 1\n[scheduler]\nsort_by_type = true\n").unwrap();
    let text = native_toml(&t);
    let back: Config = toml::from_str(&text).unwrap();
    assert_eq!(back, t.config);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "prover_workers_per_device = 1")
        .unwrap();
    assert_eq!(
        lines[at - 1],
        "# cuzk gpus.gpu_workers_per_device = 1 -> engine.prover_workers_per_device = 1"
    );
    assert!(
        text.contains("#   cuzk scheduler.sort_by_type = true -> no equivalent"),
        "{text}"
    );
}
