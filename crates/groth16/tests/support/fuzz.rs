//! What the fuzz tests of every crate share (included with `#[path]`): a global allocator that
//! records the largest single allocation, so that a case which allocates a length taken from
//! its input is caught, and a case runner that turns a panic into a failure and times each case.
//!
//! A test binary that includes this module installs [`Recording`] as its global allocator and
//! runs its targets through [`run_target`], one at a time (the record is process-wide).

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// The system allocator, recording the largest request.
pub struct Recording;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

/// Cases per target: 10,000 unless `ZKFORGE_FUZZ_CASES` says otherwise (the long runs of
/// docs/reliability.md).
pub fn cases() -> u32 {
    std::env::var("ZKFORGE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// The limits every case of a target must stay within.
pub struct Limits {
    /// Largest single allocation a case may make.
    pub allocation: usize,
    /// Longest a case may take.
    pub time: Duration,
}

/// What a target's run saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub largest_allocation: usize,
    pub slowest: Duration,
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Held by a test of the same binary that must not run while a target records allocations.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `case` on `cases()` inputs from `strategy`. A case returns Ok(true) when the input was
/// accepted, Ok(false) when it was refused with a named error, Err when something is wrong. A
/// panic, an allocation over `limits.allocation` or a case slower than `limits.time` fails the
/// target with the (shrunk) input that caused it.
pub fn run_target<S: Strategy>(
    name: &str,
    strategy: S,
    limits: Limits,
    case: impl Fn(S::Value) -> Result<bool, String>,
) -> Tally
where
    S::Value: std::fmt::Debug,
{
    let _one = exclusive();
    let tally = Mutex::new(Tally::default());
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        // Shrinking re-runs failing cases; a few hundred steps find a small input.
        max_shrink_iters: 512,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    // Panics are expected inside some parsers (and turned into errors there) and are reported
    // by this runner otherwise: printing each one (with a backtrace under RUST_BACKTRACE=1)
    // would only slow the run down.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = runner.run(&strategy, |input| {
        LARGEST.store(0, Ordering::Relaxed);
        let t = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| case(input)));
        let took = t.elapsed();
        let largest = LARGEST.load(Ordering::Relaxed);
        let accepted = match outcome {
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                return Err(TestCaseError::fail(format!("panicked: {msg}")));
            }
            Ok(Err(wrong)) => return Err(TestCaseError::fail(wrong)),
            Ok(Ok(accepted)) => accepted,
        };
        if largest > limits.allocation {
            return Err(TestCaseError::fail(format!(
                "allocated {largest} bytes at once (limit {})",
                limits.allocation
            )));
        }
        if took > limits.time {
            return Err(TestCaseError::fail(format!(
                "took {took:?} (limit {:?})",
                limits.time
            )));
        }
        let mut t = tally.lock().unwrap();
        t.cases += 1;
        t.accepted += u64::from(accepted);
        t.rejected += u64::from(!accepted);
        t.largest_allocation = t.largest_allocation.max(largest);
        t.slowest = t.slowest.max(took);
        Ok(())
    });
    std::panic::set_hook(hook);
    if let Err(e) = result {
        panic!("fuzz target {name}: {e}");
    }
    let t = tally.into_inner().unwrap();
    println!(
        "FUZZ {name}: {} cases, {} accepted, {} refused with a named error, largest allocation \
         {} KiB, slowest case {:?}",
        t.cases,
        t.accepted,
        t.rejected,
        t.largest_allocation >> 10,
        t.slowest
    );
    t
}
