#!/usr/bin/env bash
# Multi-GPU scaling (issue #9), on a machine with two or more GPUs: the same work on 1 GPU and
# on 2 in one run. Usage: scripts/gpu-multi.sh [all|daemon,synthetic,porep]; binaries and
# output as in gpu-pipeline.sh (scripts/gpu-common.sh).
#  1. 2 KiB PoRep through the daemon, [gpu] devices = "0" then "0,1": every proof verified.
#  2. synthetic 2^22 partitions with a real key (every proof self-verified), 1 vs 2 GPUs.
#  3. PoRep-shaped 2^26 partitions (tiled key), 1 vs 2 GPUs, 2 workers per GPU.
what="${1:-all}"
source "$(dirname "$0")/gpu-common.sh"

if [[ $what == all || $what == *daemon* ]]; then
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

if [[ $what == all || $what == *synthetic* ]]; then
run synthetic22 420 "$zk" bench pipeline --backend cuda --shape synthetic --log-size 22 \
  --jobs 10 --partitions 4 --gpus 1,2 --prover-workers 2 --synthesis-workers 16 \
  --timeline-dir "$out/s22"
grep -v TIMELINE "$out/synthetic22.log" | tail -n 8
fi
if [[ $what == all || $what == *porep* ]]; then
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
finish
