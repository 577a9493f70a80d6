//! `zkforge timeline` on the recorded engine log: the numbers, an SVG that parses as XML with
//! a rect per bar, the HTML page; a missing or event-free log is a clear error.

mod common;

use common::{run_fails_with, run_ok, zkforge};

const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../timeline/tests/data/bench-engine-3x2.log"
);

#[test]
fn timeline_prints_numbers_and_writes_svg_and_html() {
    let out_dir = tempfile::tempdir().unwrap();
    let svg = out_dir.path().join("out.svg");
    let html = out_dir.path().join("out.html");
    let stdout = run_ok(
        zkforge()
            .args(["timeline", LOG, "--svg"])
            .arg(&svg)
            .arg("--html")
            .arg(&html),
    );
    let prover = stdout
        .lines()
        .find(|l| l.starts_with("prover-0-0"))
        .unwrap();
    assert!(
        prover.contains("94.6%") && prover.contains("2.494 ms"),
        "{prover}"
    );
    assert!(stdout.contains("bottleneck           prove"), "{stdout}");
    assert!(stdout.contains("3 submitted, 3 done"), "{stdout}");

    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    let bars = |class: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some(class))
            .count()
    };
    assert_eq!((bars("bar synth"), bars("bar prove")), (6, 6));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg ") && page.contains("<table>"));
}

#[test]
fn missing_or_empty_logs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = zkforge()
        .arg("timeline")
        .arg(dir.path().join("nope.log"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading"));

    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "INFO nothing to see\nTIMELINE {broken\n").unwrap();
    run_fails_with(
        zkforge().arg("timeline").arg(&empty),
        "no TIMELINE events found",
    );
}
