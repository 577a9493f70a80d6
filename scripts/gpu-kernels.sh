#!/usr/bin/env bash
# Issue 20's kernel runs, old and new side by side on one device machine:
#   scripts/gpu-kernels.sh [what...]   what: check, base, new (default: all three)
# Expects .device/gpu_bench.gz (this checkout's build) and .device/gpu_bench_base.gz (a build of
# the commit to compare against), stripped and gzipped (built elsewhere: the device machine has
# no cargo). Same seed for both benches (ZKFORGE_SEED, printed); logs and tables under $OUT.
# Build the base in a target directory of its own, or one after the other with the kernels
# swapped in: cargo gives zkforge-cuda's build script the same OUT_DIR from any checkout, so a
# base built beside this one in a shared target directory embeds this build's kernels.
# BENCH_BASE / BENCH_NEW choose the gpu_bench bench filters (comma-separated); ZKFORGE_CHECK
# the check groups (ntt, h, g1, g2).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out" /tmp/zkf
for b in gpu_bench gpu_bench_base; do
  [ -f ".device/$b.gz" ] && gunzip -c ".device/$b.gz" > "/tmp/zkf/$b" && chmod +x "/tmp/zkf/$b"
done
export ZKFORGE_SEED="${ZKFORGE_SEED:-$(date +%s%N)}"
echo "seed $ZKFORGE_SEED"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit \
  --format=csv | tee "$out/gpu.txt"
what="${*:-check base new}"
rc=0
hung=0
for w in $what; do
  [ $hung -eq 1 ] && [ "$w" != check ] && continue
  case "$w" in
    check)
      mkdir -p "$out/check"
      timeout 480 /tmp/zkf/gpu_bench check "$out/check" > "$out/check.log" 2>&1
      crc=$?
      [ $crc -ne 0 ] && rc=1
      # A kernel that hangs in the check would hang the benchmark too: skip it then. (The
      # checks outgrew 180 s on the H200 with the 2^25 cases.)
      [ $crc -eq 124 ] && { echo "check timed out: no benchmarks"; hung=1; }
      grep -E '^(FAIL|CHECKS)' "$out/check.log" ;;
    base)
      mkdir -p "$out/base"
      timeout 130 /tmp/zkf/gpu_bench_base bench "$out/base" "${BENCH_BASE:-ntt,g1big}" \
        > "$out/base.log" 2>&1 || rc=1 ;;
    new)
      mkdir -p "$out/new"
      timeout 240 /tmp/zkf/gpu_bench bench "$out/new" "${BENCH_NEW:-ntt,hchain,porep}" \
        > "$out/new.log" 2>&1 || rc=1 ;;
  esac
done
tar -czf /tmp/zkf/logs.tgz -C "$out" . 2>/dev/null && mv /tmp/zkf/logs.tgz "$out/"
echo "== profiles"; grep -h 'msm profile' "$out"/*.log | cut -c1-400
for w in base new; do
  [ -f "$out/$w.log" ] && { echo "== $w"; grep -E '^\| ' "$out/$w.log"; }
done
echo "gpu-kernels: rc=$rc"
exit $rc
