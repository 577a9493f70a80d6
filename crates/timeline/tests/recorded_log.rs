//! The parser and the analysis on a log recorded from a real engine run, against numbers
//! worked out by hand from its events; the SVG is well-formed XML with one rect per bar;
//! malformed lines are skipped and reported; the bottleneck rules on small hand-made logs.
//!
//! `tests/data/bench-engine-3x2.log` is verbatim output of
//! `zkforge bench engine --log-size 10 --jobs 3 --partitions 2 2> log` (colours on), keeping
//! two ordinary lines and every TIMELINE line.

use zkforge_timeline::analysis::Bottleneck;
use zkforge_timeline::waterfall::LaneKind;
use zkforge_timeline::{analyze_log, svg, Analysis, SvgOptions};

const RECORDED: &str = include_str!("data/bench-engine-3x2.log");

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-6 * expected.abs().max(1.0)
}

macro_rules! assert_close {
    ($actual:expr, $expected:expr) => {{
        let (a, e): (f64, f64) = ($actual, $expected);
        assert!(close(a, e), "{} = {a}, expected {e}", stringify!($actual));
    }};
}

fn lane<'a>(a: &'a Analysis, name: &str) -> &'a zkforge_timeline::analysis::LaneStats {
    a.stats
        .lanes
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no lane {name}"))
}

#[test]
fn recorded_log_parses_completely() {
    let a = analyze_log(RECORDED).unwrap();
    assert!(a.parsed.skipped.is_empty(), "{:?}", a.parsed.skipped);
    // 37 TIMELINE lines: 3 submits, 1 load, 6+6 synth start/end, 6 queue, 6+6 prove, 3 done.
    assert_eq!(a.parsed.events.len(), 37);
    let names: Vec<&str> = a.waterfall.lanes.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["params", "synth-0", "synth-1", "prover-0-0"]);
    assert_eq!(a.waterfall.lanes[3].kind, LaneKind::Prover);
    assert_eq!(a.waterfall.bars.len(), 1 + 6 + 6);
}

#[test]
fn recorded_log_numbers_match_the_hand_computation() {
    let a = analyze_log(RECORDED).unwrap();
    let s = &a.stats;
    // Window: the parameter load starts first, at SRS_LOAD_END − duration
    // = 0.789301 − 0.575565 = 0.213736; it ends at the last PROVE_END, 251.092043.
    // 251.092043 − 0.213736 = 250.878307 ms.
    assert_close!(s.window_start_ms, 0.213736);
    assert_close!(s.window_ms(), 250.878307);

    // synth-0: (1.672482 − 0.797463) + (2.170992 − 1.683068) + (45.037436 − 43.3429)
    //        = 0.875019 + 0.487924 + 1.694536 = 3.057479 ms; / 250.878307 = 0.0121871
    assert_close!(lane(&a, "synth-0").busy_ms, 3.057479);
    assert_close!(lane(&a, "synth-0").busy_fraction, 3.057479 / 250.878307);
    // synth-1: (1.163226 − 0.771214) + (1.806962 − 1.186431) + (3.932768 − 1.816386)
    //        = 0.392012 + 0.620531 + 2.116382 = 3.128925 ms; / 250.878307 = 0.0124719
    assert_close!(lane(&a, "synth-1").busy_ms, 3.128925);
    assert_close!(lane(&a, "synth-1").busy_fraction, 3.128925 / 250.878307);
    // prover-0-0, PROVE_END − PROVE_START of its six bars:
    //   39.596829 + 39.881572 + 38.968677 + 38.887185 + 40.235778 + 39.843926 = 237.413967 ms
    //   / 250.878307 = 0.9463312
    assert_close!(lane(&a, "prover-0-0").busy_ms, 237.413967);
    assert_close!(lane(&a, "prover-0-0").busy_fraction, 0.9463312);
    assert_close!(s.devices[0].busy_fraction, 0.9463312);
    // params: one load of 0.575565 ms.
    assert_close!(lane(&a, "params").busy_ms, 0.575565);

    // Prover gaps, PROVE_START(n+1) − PROVE_END(n):
    //   43.318624 − 40.805834 = 2.512790    85.743682 − 83.200196 = 2.543486
    //   127.174374 − 124.712359 = 2.462015  168.575151 − 166.061559 = 2.513592
    //   211.248117 − 208.810929 = 2.437188  sum 12.469071 / 5 = 2.4938142 ms
    let prover = lane(&a, "prover-0-0");
    assert_eq!(prover.gaps, 5);
    assert_close!(prover.mean_gap_ms.unwrap(), 2.4938142);
    assert_close!(s.mean_prover_gap_ms.unwrap(), 2.4938142);
    // One prover lane on device 0: the device's gaps are the lane's.
    assert_eq!(s.devices[0].gaps, 5);
    assert_close!(s.devices[0].mean_gap_ms.unwrap(), 2.4938142);
    // synth-0 gaps: (1.683068 − 1.672482) + (43.3429 − 2.170992) = 0.010586 + 41.171908; / 2
    assert_close!(lane(&a, "synth-0").mean_gap_ms.unwrap(), 20.591247);

    // Time to first proof: JOB_DONE(1) − JOB_SUBMIT(1) = 85.711785 − 0.164934 = 85.546851 ms.
    assert_close!(s.time_to_first_proof_ms.unwrap(), 85.546851);
    // Steady state: (253.621919 − 85.711785) / (3 − 1) = 83.955067 ms per proof.
    assert_close!(s.steady_state_ms_per_proof.unwrap(), 83.955067);
    // Partition cycle: two partitions a job; PROVE_ENDs from the 3rd on: 124.712359,
    // 166.061559, 208.810929, 251.092043; gaps 41.349200, 42.749370, 42.281114; median
    // 42.281114 ms (84.562 ms a proof).
    assert_eq!(s.partitions_per_proof, 2);
    assert_close!(s.partition_cycle_ms.unwrap(), 42.281114);
    assert_eq!((s.jobs_submitted, s.jobs_done, s.jobs_failed), (3, 3, 0));
    // 94.6% ≥ 90%: the prover is the bottleneck.
    assert_eq!(s.bottleneck, Bottleneck::Prove);
}

#[test]
fn svg_is_well_formed_with_one_rect_per_bar() {
    let a = analyze_log(RECORDED).unwrap();
    let text = svg::document(&a.waterfall, &SvgOptions::default());
    let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let count = |class: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some(class))
            .count()
    };
    assert_eq!(count("bar synth"), 6);
    assert_eq!(count("bar prove"), 6);
    assert_eq!(count("bar params"), 1);
    assert_eq!(count("mark done"), 3);
    // Every bar has a tooltip naming its job, partition and duration.
    let tip = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("bar prove"))
        .and_then(|n| n.children().find(|c| c.has_tag_name("title")))
        .and_then(|t| t.text())
        .unwrap();
    assert!(
        tip.starts_with("job 1 · partition 1 · prove · 39.6 ms"),
        "{tip}"
    );

    let html = zkforge_timeline::html::page(&a.waterfall, &a.stats, &SvgOptions::default());
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg "));
    assert!(html.contains("<td>prover-0-0</td>") && html.contains("94.6%"));
}

#[test]
fn malformed_lines_are_skipped_and_reported() {
    let mut log = RECORDED.lines().take(10).collect::<Vec<_>>().join("\n");
    log.push_str("\nINFO timeline: TIMELINE {\"t_ms\":12.5,\"event\":\"SYNTH_END\",\"job\":");
    log.push_str("\nINFO timeline: TIMELINE {\"event\":\"JOB_DONE\",\"job\":1}\n");
    let a = analyze_log(&log).unwrap();
    assert_eq!(a.parsed.events.len(), 8);
    let lines: Vec<usize> = a.parsed.skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, [11, 12]);
    assert!(
        a.parsed.skipped[1].reason.contains("t_ms"),
        "{:?}",
        a.parsed.skipped
    );

    let err = analyze_log("no events here\nTIMELINE {oops}\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no TIMELINE events found (1 malformed TIMELINE lines skipped)"
    );
}

#[test]
fn future_events_are_drawn_or_ignored() {
    let log = r#"TIMELINE {"t_ms":0,"event":"JOB_SUBMIT","job":7}
TIMELINE {"t_ms":1,"event":"SYNTH_START","job":7,"partition":0,"worker":"synth-0"}
TIMELINE {"t_ms":3,"event":"SYNTH_END","job":7,"partition":0,"worker":"synth-0","duration_ms":2,"rss_bytes":1}
TIMELINE {"t_ms":4,"event":"PROVE_START","job":7,"partition":0,"worker":"prover-0-1","device":0,"lock_wait_ms":0.5}
TIMELINE {"t_ms":4.5,"event":"GPU_PHASE","job":7,"partition":0,"worker":"prover-0-1","device":0,"phase":"ntt","duration_ms":1}
TIMELINE {"t_ms":5.5,"event":"GPU_PHASE","job":7,"partition":0,"worker":"prover-0-1","device":0,"phase":"msm","duration_ms":2}
TIMELINE {"t_ms":6,"event":"PINNED_POOL_GROW","bytes":1048576}
TIMELINE {"t_ms":8,"event":"PROVE_END","job":7,"partition":0,"worker":"prover-0-1","device":0,"duration_ms":4,"lock_wait_ms":1.5}
TIMELINE {"t_ms":9,"event":"JOB_DONE","job":7}"#;
    let a = analyze_log(log).unwrap();
    assert!(a.parsed.skipped.is_empty());
    assert_eq!(a.waterfall.phases.len(), 2);
    let text = svg::document(&a.waterfall, &SvgOptions::default());
    let doc = roxmltree::Document::parse(&text).unwrap();
    let class_count = |c: &str| {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(c))
            .count()
    };
    assert_eq!(class_count("phase"), 2);
    assert_eq!(class_count("lockwait"), 1);
    assert_eq!(class_count("lockwait-inner"), 1);
    assert_eq!(class_count("bar prove"), 1);

    // Window 1..8 = 7 ms. The prove bar (4..8) waited 0.5 ms before PROVE_START and
    // 1.5 − 0.5 = 1 ms inside: lane busy (4 − 1)/7; the device union counts the bar, 4/7;
    // GPU phases 4.5..5.5 and 5.5..7.5 cover 3 ms: 3/7.
    let s = &a.stats;
    let prover = s.lanes.iter().find(|l| l.name == "prover-0-1").unwrap();
    assert_close!(prover.busy_fraction, 3.0 / 7.0);
    assert_close!(prover.lock_wait_ms, 1.5);
    assert_close!(s.devices[0].busy_fraction, 4.0 / 7.0);
    assert_close!(s.devices[0].phase_busy_fraction.unwrap(), 3.0 / 7.0);
}

/// One synthesis and one prover lane: (job, synth start, synth end, prove start, prove end).
fn pipeline_log(units: &[(u64, f64, f64, f64, f64)], load: Option<(f64, f64)>) -> String {
    let mut log = String::new();
    let mut line = |t: f64, rest: String| {
        log.push_str(&format!("TIMELINE {{\"t_ms\":{t},{rest}}}\n"));
    };
    if let Some((end, took)) = load {
        line(
            end,
            format!("\"event\":\"SRS_LOAD_END\",\"job\":1,\"duration_ms\":{took}"),
        );
    }
    for &(job, s0, s1, p0, p1) in units {
        let at = |w: &str| format!("\"job\":{job},\"partition\":0,\"worker\":\"{w}\"");
        line(s0, format!("\"event\":\"SYNTH_START\",{}", at("synth-0")));
        line(s1, format!("\"event\":\"SYNTH_END\",{}", at("synth-0")));
        line(
            p0,
            format!(
                "\"event\":\"PROVE_START\",{},\"device\":0",
                at("prover-0-0")
            ),
        );
        line(
            p1,
            format!("\"event\":\"PROVE_END\",{},\"device\":0", at("prover-0-0")),
        );
    }
    log
}

#[test]
fn bottleneck_rules() {
    // Synthesis 0–10 and 10–20, proving 10–12 and 20–22: the device idles [0,10] and
    // [12,20] (18 ms) and synthesis runs through all of it: 18/18 ≥ 50% → synthesis.
    let log = pipeline_log(
        &[(1, 0.0, 10.0, 10.0, 12.0), (2, 10.0, 20.0, 20.0, 22.0)],
        None,
    );
    let s = analyze_log(&log).unwrap().stats;
    assert_close!(s.devices[0].busy_fraction, 4.0 / 22.0);
    assert_close!(s.synth_cover_of_device_idle.unwrap(), 1.0);
    assert_eq!(s.bottleneck, Bottleneck::Synthesis);

    // Synthesis 0–1 and 10–11, proving 1–3 and 11–13: the device idles [0,1] and [3,11]
    // (9 ms), synthesis covers 1 + 1 of it: 2/9 = 22% < 50% → submission/client.
    let log = pipeline_log(
        &[(1, 0.0, 1.0, 1.0, 3.0), (2, 10.0, 11.0, 11.0, 13.0)],
        None,
    );
    let s = analyze_log(&log).unwrap().stats;
    assert_close!(s.synth_cover_of_device_idle.unwrap(), 2.0 / 9.0);
    assert_eq!(s.bottleneck, Bottleneck::Submission);

    // A 10 ms load (0–10) before synthesis 10–11 and proving 11–12: 10/12 ≥ 50% → load.
    let log = pipeline_log(&[(1, 10.0, 11.0, 11.0, 12.0)], Some((10.0, 10.0)));
    let s = analyze_log(&log).unwrap().stats;
    assert_close!(s.window_ms(), 12.0);
    assert_eq!(s.bottleneck, Bottleneck::ParameterLoad);
}
