#!/usr/bin/env bash
# Hardware counters of a few kernels at a 32 GiB partition's sizes (Nsight Compute, on the device
# machine: Firecracker runtimes only, docs/gpu.md), so that a kernel's next design starts from
# where its time goes instead of a byte count:
#   scripts/gpu-profile.sh [GROUP:KERNEL-REGEX:COUNT ...]
# Each argument profiles the first COUNT launches matching KERNEL-REGEX while `gpu_bench bench`
# runs GROUP (its warm-up call comes first, so those are the ones measured). Default: the h step's
# NTT passes, the H MSM's sort and accumulation, and the constraint products. Speed of light and
# occupancy sections only (each is a few kernel replays); clocks left alone (METHOD.md).
# Expects .device/gpu_bench.gz as scripts/gpu-kernels.sh does (BENCH=gpu_bench_base profiles
# the baseline build instead); reports under $OUT/profile/. SECTIONS adds Nsight Compute sections
# (e.g. "MemoryWorkloadAnalysis_Tables"), METRICS raw metrics, comma-separated (e.g.
# l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum or the warp stall ratios).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${OUT:-$root/gpu-out}/profile"
mkdir -p "$out" /tmp/zkf
bench="${BENCH:-gpu_bench}"
[ -f ".device/$bench.gz" ] && gunzip -c ".device/$bench.gz" > "/tmp/zkf/$bench" && chmod +x "/tmp/zkf/$bench"
extra=()
for s in ${SECTIONS:-}; do extra+=(--section "$s"); done
[ -n "${METRICS:-}" ] && extra+=(--metrics "$METRICS")
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(
  "hchain:ntt_(dif|dit)_pass|ntt_bitrev_scale|h_combine:8"
  "g1big:msm_(classify|hist|scatter|accumulate_affine_g1|bucket_reduce_g1|reduce_groups_g1)|scan_(tiles|add):16"
  "spmv:spmv_csr|spmv_csr_long|fr_hadamard:4"
)
rc=0
for t in "${targets[@]}"; do
  IFS=: read -r group regex count <<< "$t"
  echo "== $group: $regex ($count launches)"
  mkdir -p "$out/$bench-$group"
  timeout "${PROFILE_TIMEOUT:-240}" ncu --clock-control none --section SpeedOfLight \
    --section Occupancy --section LaunchStats "${extra[@]}" -k "regex:$regex" -c "$count" \
    "/tmp/zkf/$bench" bench "$out/$bench-$group" "$group" > "$out/$bench-$group.txt" 2>&1 || rc=1
  grep -E '^  [a-z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|DRAM Throughput|Bank|l1tex__|smsp__|ERROR|panicked' \
    "$out/$bench-$group.txt" | head -n 200
done
exit $rc
