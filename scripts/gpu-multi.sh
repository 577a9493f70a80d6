#!/usr/bin/env bash
# Multi-GPU scaling (issue #9), on a machine with two or more GPUs: the same work on 1 GPU and
# on 2 in one run. Usage: scripts/gpu-multi.sh [all|daemon,synthetic,porep]. Binaries and output as in gpu-pipeline.sh ($BIN/zkforge[.gz], $OUT).
#  1. 2 KiB PoRep through the daemon, [gpu] devices = "0" then "0,1": every proof verified.
#  2. synthetic 2^22 partitions with a real key (every proof self-verified), 1 vs 2 GPUs.
#  3. PoRep-shaped 2^26 partitions (tiled key), 1 vs 2 GPUs, 2 workers per GPU.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${BIN:-.gpucheck}"
final="${OUT:-$root/gpu-out}"
work="${WORK:-/tmp/zkforge-gpu}"
out="$work/out"
mkdir -p "$final" "$out"
[ -e "$bin/zkforge.gz" ] && gzip -dc "$bin/zkforge.gz" > "$work/zkforge" && chmod +x "$work/zkforge"
[ -x "$work/zkforge" ] || cp "$bin/zkforge" "$work/zkforge"
zk="$work/zkforge"
export FIL_PROOFS_PARAMETER_CACHE="$work/params" ZKFORGE_CACHE="$work/cache" NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,memory.total --format=csv > "$out/gpu.txt" 2>&1; nproc >> "$out/gpu.txt"
rc=0
run() {
  local name=$1 t=$2; shift 2
  echo "== $name: $*" | tee -a "$out/summary.txt"
  local s=$(date +%s)
  timeout "$t" "$@" > "$out/$name.log" 2>&1 || { echo "   FAILED rc=$?" | tee -a "$out/summary.txt"; rc=1; }
  echo "   $(( $(date +%s) - s )) s" | tee -a "$out/summary.txt"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stages="${1:-all}"
if [[ $stages == all || $stages == *daemon* ]]; then
run params 200 "$zk" params generate --proof porep --sector-size 2KiB --out "$work/params"
run fixtures 200 "$zk" fixtures --sector-size 2KiB --out "$work/fixtures"
for gpus in "0" "0,1"; do
  tag=g$(echo "$gpus" | tr -cd ',' | wc -c | awk '{print $1+1}')
  cat > "$work/$tag.toml" <<TOML
[daemon]
listen = "127.0.0.1:9820"
params = "$work/params"
backend = "cuda"
[engine]
synthesis_workers = 12
prove_queue_depth = 8
[gpu]
devices = "$gpus"
TOML
  "$zk" daemon --config "$work/$tag.toml" > "$out/daemon-$tag.log" 2>&1 &
  d=$!
  for _ in $(seq 1 60); do port_open 9820 && break; sleep 1; done
  run "porep-$tag-warm" 120 "$zk" bench batch --addr 127.0.0.1:9820 --type porep \
    --fixtures "$work/fixtures" --params "$work/params" -c 2 -j 2
  run "porep-$tag" 300 "$zk" bench batch --addr 127.0.0.1:9820 --type porep \
    --fixtures "$work/fixtures" --params "$work/params" -c 24 -j 12 --verify --json "$out/porep-$tag.json"
  tail -n 7 "$out/porep-$tag.log"
  kill -TERM "$d"; wait "$d"
done
fi

if [[ $stages == all || $stages == *synthetic* ]]; then
run synthetic22 420 "$zk" bench pipeline --backend cuda --shape synthetic --log-size 22 \
  --jobs 10 --partitions 4 --gpus 1,2 --prover-workers 2 --synthesis-workers 16 \
  --timeline-dir "$out/s22"
grep -v TIMELINE "$out/synthetic22.log" | tail -n 8
fi
if [[ $stages == all || $stages == *porep* ]]; then
# The staging pool is sized above what the memory budget lets be in flight, so buffers are
# pinned once and never unpinned during the run.
run porep24 300 "$zk" bench pipeline --backend cuda --shape porep --log-size 24 \
  --jobs 12 --partitions 4 --gpus 1,2 --prover-workers 2 --synthesis-workers 8 \
  --memory-budget 48GiB --staging-pool 64GiB --timeline-dir "$out/p24"
grep -v TIMELINE "$out/porep24.log" | tail -n 8
run porep26 480 "$zk" bench pipeline --backend cuda --shape porep --log-size 26 \
  --jobs 4 --partitions 4 --gpus 1,2 --prover-workers 2 --synthesis-workers 6 \
  --memory-budget 96GiB --staging-pool 96GiB --timeline-dir "$out/p26"
grep -v TIMELINE "$out/porep26.log" | tail -n 8
fi
echo "gpu-multi: rc=$rc" | tee -a "$out/summary.txt"
cp "$out/summary.txt" "$final/summary.txt"
tar czf "$final/results.tgz" -C "$work" out
exit $rc
