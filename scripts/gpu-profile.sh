#!/usr/bin/env bash
# Hardware counters of a few kernels at a 32 GiB partition's sizes (Nsight Compute, on the device
# machine: Firecracker runtimes only, docs/gpu.md), so that a kernel's next design starts from
# where its time goes instead of a byte count:
#   scripts/gpu-profile.sh [GROUP:KERNEL-REGEX:COUNT ...]
# Each argument profiles the first COUNT launches matching KERNEL-REGEX while `gpu_bench bench`
# runs GROUP (its warm-up call comes first, so those are the ones measured). Default: the h step's
# NTT passes, the H MSM's sort and accumulation, and the constraint products. Speed of light and
# occupancy sections only (each is a few kernel replays); clocks left alone (METHOD.md).
# Expects .device/gpu_bench.gz as scripts/gpu-kernels.sh does; reports under $OUT/profile/.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${OUT:-$root/gpu-out}/profile"
mkdir -p "$out" /tmp/zkf
[ -f .device/gpu_bench.gz ] && gunzip -c .device/gpu_bench.gz > /tmp/zkf/gpu_bench && chmod +x /tmp/zkf/gpu_bench
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
  mkdir -p "$out/$group"
  timeout "${PROFILE_TIMEOUT:-240}" ncu --clock-control none --section SpeedOfLight \
    --section Occupancy --section LaunchStats -k "regex:$regex" -c "$count" \
    /tmp/zkf/gpu_bench bench "$out/$group" "$group" > "$out/$group.txt" 2>&1 || rc=1
  grep -E '^  [a-z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|DRAM Throughput|ERROR|panicked' \
    "$out/$group.txt" | head -n 160
done
exit $rc
