#!/usr/bin/env bash
# What JIT costs (issue 50, item 5), in one device call of ~5 minutes. A build whose only code
# an sm_90 card can run is compute_80 PTX (ZKFORGE_CUDA_ARCHS=80: SASS for sm_80, which sm_90
# cannot run, and compute_80 PTX, which the driver compiles at load) meets its kernels as a
# Blackwell card meets a build older than it. Binaries ($BIN, default .gpucheck/, as in
# gpu-common.sh): gpu_bench built with ZKFORGE_CUDA_ARCHS=90 (native SASS) and
# gpu_bench-ptx80 built with ZKFORGE_CUDA_ARCHS=80.
#
# Starts (open GPU 0, load the kernels, exit: `gpu_bench hog` holding nothing for 0 s), wall
# time each: the native build; the PTX build with an empty JIT cache, again with the cache it
# left (as the packaged unit keeps it in CUDA_CACHE_PATH=/var/cache/zkforge), and with the cache
# disabled (a service user with nowhere to keep it: every start pays). Then the kernels:
# `gpu_bench bench ntt,g1` with each build, medians of device-event timings after a warm-up.
source "$(dirname "$0")/gpu-common.sh"
sass="$work/gpu_bench"
ptx="$work/gpu_bench-ptx80"
export CUDA_CACHE_PATH="$work/jit-cache" CUDA_CACHE_MAXSIZE=$((4 << 30))
rm -rf "$CUDA_CACHE_PATH"

# start NAME BINARY [VAR=VALUE...]: one start's wall time, into the summary.
start() {
  local name=$1 bin=$2; shift 2
  local t0 t1
  t0=$(date +%s%N)
  env "$@" "$bin" hog 1000000 0 > "$out/start-$name.log" 2>&1 || { echo "   $name FAILED" | tee -a "$out/summary.txt"; rc=1; }
  t1=$(date +%s%N)
  printf 'start %-24s %8.2f s\n' "$name" "$(( (t1 - t0) / 1000000 ))e-3" | tee -a "$out/summary.txt"
}

start native-sass "$sass"
start ptx-first "$ptx"
start ptx-second "$ptx"
start ptx-third "$ptx"
start ptx-cache-disabled "$ptx" CUDA_CACHE_DISABLE=1
echo "JIT cache after: $(du -sh "$CUDA_CACHE_PATH" 2>/dev/null | cut -f1)" | tee -a "$out/summary.txt"
head -n 1 "$out/start-native-sass.log" | tee -a "$out/summary.txt"

mkdir -p "$out/bench-sass" "$out/bench-ptx"
run bench-sass 200 "$sass" bench "$out/bench-sass" ntt,g1
run bench-ptx 200 "$ptx" bench "$out/bench-ptx" ntt,g1
# The two tables side by side: name, native median, PTX median.
python3 - "$out/bench-sass/bench.md" "$out/bench-ptx/bench.md" <<'PY' | tee -a "$out/summary.txt"
import re, sys
def rows(path):
    r = {}
    for line in open(path, errors="replace"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and re.match(r"[0-9.]+", cells[1] or ""):
            r[cells[0]] = float(re.match(r"[0-9.]+", cells[1]).group())
    return r
sass, ptx = rows(sys.argv[1]), rows(sys.argv[2])
print(f"{'kernel':52} {'SASS ms':>9} {'PTX ms':>9} {'PTX/SASS':>8}")
for name, s in sass.items():
    p = ptx.get(name)
    if p is not None:
        print(f"{name:52} {s:9.2f} {p:9.2f} {p / s:8.3f}")
PY
finish
