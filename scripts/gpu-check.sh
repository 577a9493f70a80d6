#!/usr/bin/env bash
# One-shot GPU verification for zkforge-cuda: correctness first, then timings.
# Usage: scripts/gpu-check.sh [check|bench|proofs|all] [bench-filter: ntt,g1,g2]
# Uses .device/{gpu_bench,gpu_test} when present (pre-built elsewhere, e.g. for a machine
# without cargo); otherwise builds them with cargo (needs NVCC, see install-cuda-toolkit.sh).
# Writes logs and markdown tables under $OUT (default ./gpu-out).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
what="${1:-all}"
filter="${2:-all}"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"

if [ -x .device/gpu_bench ]; then
  bench=.device/gpu_bench
  test_bin=.device/gpu_test
else
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/cuda-dev}"
  cargo build --release -p zkforge-cuda --features cuda --examples || exit 1
  bench="$CARGO_TARGET_DIR/release/examples/gpu_bench"
  test_bin="$(cargo test --release -p zkforge-cuda --features cuda --test gpu --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)"
fi

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv || true; } \
  | tee "$out/gpu.txt"

rc=0
if [ "$what" = check ] || [ "$what" = all ]; then
  if [ -n "${test_bin:-}" ] && [ -x "$test_bin" ]; then
    timeout 300 "$test_bin" --include-ignored --nocapture 2>&1 | tee "$out/test.log" | tail -n 5 || rc=1
  fi
  timeout 420 "$bench" check "$out" 2>&1 | tee "$out/check.log" | grep -vE '^PASS' || true
  grep -q 'CHECKS: .* 0 failed' "$out/check.log" || rc=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  timeout 540 "$bench" bench "$out" "$filter" 2>&1 | tee "$out/bench.log" | grep -E '^(BENCH|device|\|)' || rc=1
fi
if [ "$what" = proofs ] || [ "$what" = all ]; then
  # Full proofs: CUDA backend bytes == CPU backend bytes, Filecoin 2 KiB fixtures verified.
  proofs_bin=.gpucheck/backend_check
  [ -x "$proofs_bin" ] || proofs_bin="${CARGO_TARGET_DIR:-$root/target/cuda-dev}/release/examples/backend_check"
  if [ -x "$proofs_bin" ]; then
    RUST_LOG=warn timeout 480 "$proofs_bin" "${TMPDIR:-/tmp}/zkforge-backend-check" 2>&1 | tee "$out/proofs.log" | grep -v '^\s*$' || rc=1
  else
    echo "no backend_check binary: build it with cargo build --release -p zkforge-cuda --features cuda --example backend_check"
    rc=1
  fi
fi
echo "gpu-check: rc=$rc (logs in $out)"
exit $rc
