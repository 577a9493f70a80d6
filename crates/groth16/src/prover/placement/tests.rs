use super::*;

const GIB: u64 = 1 << 30;
/// A 32 GiB PoRep partition's vectors on the device (docs/perf.md, "Small cards").
const DOMAIN: u64 = 32 << 27;
const AUX: u64 = 32 * 130_169_893;
const A_AUX: u64 = 32 * 129_779_383;
/// MSM scratch (`cuda::msm::plan::scratch_bytes` at these sizes): H's with the default cut, the
/// largest; and with one window batch and the scalars converted in place, for H and A.
const SCRATCH_H: u64 = 9_140 * GIB / 1000;
const SCRATCH_H_LEAN: u64 = 1_308 * GIB / 1000;
const SCRATCH_A_LEAN: u64 = 1_269 * GIB / 1000;

/// The working sets of docs/perf.md "Small cards: where the memory goes", at 32 GiB.
fn working_sets() -> Vec<WorkingSet> {
    vec![
        WorkingSet {
            name: "as reserved today",
            peak_bytes: 29_940 * GIB / 1000,
            extra_h2d_bytes: 0,
            streams_items: true,
        },
        WorkingSet {
            name: "phase-ordered",
            peak_bytes: DOMAIN + AUX + SCRATCH_H,
            extra_h2d_bytes: 0,
            streams_items: true,
        },
        WorkingSet {
            name: "tight",
            peak_bytes: (3 * DOMAIN).max(AUX + A_AUX + SCRATCH_A_LEAN),
            extra_h2d_bytes: AUX,
            streams_items: true,
        },
        WorkingSet {
            name: "two vectors",
            peak_bytes: (2 * DOMAIN)
                .max(AUX + A_AUX + SCRATCH_A_LEAN)
                .max(DOMAIN + SCRATCH_H_LEAN),
            extra_h2d_bytes: 2 * DOMAIN + AUX,
            streams_items: true,
        },
    ]
}

/// A 32 GiB PoRep key on a card with `free_gib` of VRAM free (budget: less the 2 GiB margin),
/// copies at `gb_per_s`, 1.25 s of kernels a resident partition.
fn porep_32g(free_gib: u64, gb_per_s: f64) -> PlacementInputs {
    PlacementInputs {
        vram_budget: (free_gib - 2) * GIB,
        witness_bytes_per_s: gb_per_s * 1e9,
        stream_bytes_per_s: gb_per_s * 1e9,
        queries: QueryPoints {
            h: (1 << 27) - 1,
            l: 130_169_893,
            a: 129_779_383,
            b_g1: 33_063_154,
            b_g2: 33_063_154,
        },
        matrices_bytes: 6_840 * GIB / 1000,
        witness_bytes: AUX + 32 * 328,
        working_sets: working_sets(),
        kernels: ResidentTimes::porep_32g(1.25),
        stream_chunk_bytes: 384 << 20,
        stream_buffer_bytes: 2 * (384 << 20),
        partitions_per_proof: 10,
        choices: Choices::any(),
    }
}

#[test]
fn the_measured_split_adds_up_to_the_kernel_time() {
    let t = ResidentTimes::porep_32g(1.25);
    assert!((t.total() - 1.25).abs() < 1e-9);
    assert!(t.h > 0.7 && t.l > t.b_g1 && t.b_g2 > t.b_g1);
}

#[test]
fn the_full_card_keeps_everything_resident() {
    let inputs = porep_32g(141, 55.0);
    let p = inputs.plan().unwrap();
    assert_eq!(p.resident, Item::ALL.to_vec(), "{p}");
    assert!(p.streamed.is_empty());
    assert_eq!(p.partitions_in_flight, 2);
    assert_eq!(
        p.h2d_bytes_per_partition, inputs.witness_bytes,
        "the witness only"
    );
    assert!((p.gpu_s_per_partition - 1.25).abs() < 1e-9, "{p}");
    assert!((p.s_per_proof - 12.5).abs() < 1e-6);
    assert!(p.vram_bytes <= inputs.vram_budget);
}

#[test]
fn every_smaller_card_gets_a_plan_that_fits_its_vram() {
    for free in [48, 24, 16, 12] {
        for rate in [55.0, 25.0] {
            let inputs = porep_32g(free, rate);
            let p = inputs
                .plan()
                .unwrap_or_else(|e| panic!("{free} GiB at {rate} GB/s: {e}"));
            assert!(p.vram_bytes <= inputs.vram_budget, "{free} GiB: {p}");
            assert!(
                !p.streamed.is_empty(),
                "{free} GiB holds no 51 GiB key: {p}"
            );
            // Nothing a smaller card does is faster than the full card's 1.25 s.
            assert!(p.gpu_s_per_partition >= 1.25, "{free} GiB: {p}");
        }
    }
}

#[test]
fn predictions_order_by_vram_and_link() {
    let s = |free, rate| porep_32g(free, rate).plan().unwrap().s_per_proof;
    for rate in [55.0, 25.0] {
        assert!(s(141, rate) <= s(48, rate));
        assert!(s(48, rate) <= s(24, rate));
        assert!(s(24, rate) <= s(16, rate));
        assert!(s(16, rate) <= s(12, rate));
    }
    for free in [48, 24, 16, 12] {
        assert!(
            s(free, 55.0) < s(free, 25.0),
            "{free} GiB: the slower link costs"
        );
    }
    // Issue 35's resolve criteria, as the model sees them.
    assert!(s(16, 25.0) <= 35.0 && s(24, 55.0) <= 25.0 && s(48, 55.0) <= 20.0);
    // The predictions of docs/perf.md's table, to the tenth of a second.
    for (free, rate, predicted) in [
        (48, 55.0, 13.3),
        (48, 25.0, 14.9),
        (24, 55.0, 14.4),
        (24, 25.0, 18.8),
        (16, 55.0, 20.1),
        (16, 25.0, 31.6),
        (12, 55.0, 21.7),
        (12, 25.0, 35.0),
    ] {
        let got = s(free, rate);
        assert!(
            (got - predicted).abs() < 0.05,
            "{free} GiB at {rate} GB/s: {got:.2}"
        );
    }
}

#[test]
fn the_largest_benefit_stays_resident_first() {
    // With room for one of H (12.0 GiB) or L (11.6 GiB) beside two partitions, L is kept: its
    // 0/1 scalars make its kernels short, so its copy is what streaming it would cost; H's
    // 775 ms of kernels hide most of its copy.
    let p = porep_32g(48, 25.0).plan().unwrap();
    let resident = |i| p.resident.contains(&i);
    assert!(
        !resident(Item::H) || (resident(Item::L) && resident(Item::A)),
        "{p}"
    );
}

#[test]
fn a_card_too_small_for_any_working_set_is_refused_with_the_numbers() {
    let e = porep_32g(8, 55.0).plan().unwrap_err();
    let two_vectors = working_sets().iter().map(|w| w.peak_bytes).min().unwrap();
    assert_eq!(e.least_bytes(), two_vectors + 2 * (384 << 20));
    let msg = e.to_string();
    assert!(
        msg.contains("9.77 GiB with everything streamed") && msg.contains("budget is 6.00 GiB"),
        "{msg}"
    );
}

/// The choices the CUDA backend runs today: the key's five queries resident together or
/// streamed together, the matrices resident, one working set, up to two partitions.
fn today(inputs: PlacementInputs) -> PlacementInputs {
    PlacementInputs {
        working_sets: inputs.working_sets[..1].to_vec(),
        stream_buffer_bytes: 0,
        choices: Choices {
            resident_sets: vec![Item::ALL.to_vec(), vec![Item::Matrices]],
            max_in_flight: 2,
            shared_passes: false,
        },
        ..inputs
    }
}

#[test]
fn restricted_to_what_a_backend_runs_the_plan_picks_among_those_only() {
    let full = today(porep_32g(141, 55.0)).plan().unwrap();
    assert!(
        full.keeps_key_resident() && full.partitions_in_flight == 2,
        "{full}"
    );
    // 48 GiB: the key streamed beside the matrices, one partition of 29.94 GiB at a time.
    let p = today(porep_32g(48, 55.0)).plan().unwrap();
    assert_eq!(p.resident, vec![Item::Matrices], "{p}");
    assert_eq!(p.partitions_in_flight, 1);
    // Streamed at the pageable 6.3 GB/s the key's chunks are copied from today: ~8 s of GPU
    // a partition (7.6 s measured on the box at 48 GiB, issue 35).
    let pageable = PlacementInputs {
        stream_bytes_per_s: 6.3e9,
        ..today(porep_32g(48, 55.0))
    };
    let p = pageable.plan().unwrap();
    assert!((7.0..9.0).contains(&p.gpu_s_per_partition), "{p}");
}

#[test]
fn a_24_gib_card_is_refused_with_what_it_needs_and_what_there_is() {
    // Issue 35's 24 GiB card: a budget of 21.48 GiB.
    let inputs = PlacementInputs {
        vram_budget: 21_480 * GIB / 1000,
        ..today(porep_32g(24, 55.0))
    };
    let msg = inputs.plan().unwrap_err().to_string();
    for part in [
        "44.11 GiB of bases",
        "6.84 GiB of matrices",
        "partitions of 29.94 GiB each",
        "80.89 GiB with everything resident",
        "36.78 GiB with the matrices resident, the key streamed from host memory",
        "budget is 21.48 GiB",
    ] {
        assert!(msg.contains(part), "{part:?} missing: {msg}");
    }
}

#[test]
fn the_boundaries_are_inclusive() {
    let tiny = |budget| PlacementInputs {
        vram_budget: budget,
        queries: QueryPoints {
            h: 1,
            l: 0,
            a: 0,
            b_g1: 0,
            b_g2: 0,
        },
        matrices_bytes: 5,
        // Streaming costs more than anything: a resident key wins wherever it fits.
        stream_bytes_per_s: 1.0,
        working_sets: vec![WorkingSet {
            name: "w",
            peak_bytes: 20,
            extra_h2d_bytes: 0,
            streams_items: true,
        }],
        ..today(porep_32g(48, 55.0))
    };
    let plan = |b| tiny(b).plan();
    // 96 of bases, 5 of matrices, 20 a partition.
    assert_eq!(plan(141).unwrap().partitions_in_flight, 2);
    assert!(plan(121).unwrap().keeps_key_resident());
    assert!(!plan(120).unwrap().keeps_key_resident());
    assert!(plan(25).is_ok());
    assert_eq!(plan(24).unwrap_err().least_bytes(), 25);
}

/// Prints the table of docs/perf.md: `cargo test --release -p zkforge-groth16 --lib
/// predictions_table -- --ignored --nocapture`.
#[test]
#[ignore = "prints docs/perf.md's table of the model's predictions"]
fn predictions_table() {
    println!(
        "| VRAM free | link | s/proof | GB over PCIe a partition | GPU s a partition | plan |"
    );
    println!("|---|---|---|---|---|---|");
    for free in [12, 16, 24, 48, 141] {
        for rate in [55.0, 25.0] {
            let inputs = porep_32g(free, rate);
            let p = inputs.plan().unwrap();
            println!(
                "| {free} GiB | {rate} GB/s | {:.1} | {:.1} | {:.2} | {}: {p} |",
                p.s_per_proof,
                p.h2d_bytes_per_partition as f64 / 1e9,
                p.gpu_s_per_partition,
                inputs.working_sets[p.working_set].name
            );
        }
    }
}
