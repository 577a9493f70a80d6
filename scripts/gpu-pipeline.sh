#!/usr/bin/env bash
# The GPU pipeline checks and benchmarks of issue #8, on a machine with a GPU.
# Usage: scripts/gpu-pipeline.sh [STAGES] with STAGES e.g. "proofs,daemon" from proofs, daemon,
# stress, bench (= b24 and b26) (default all).
# Binaries zkforge and backend_check (built with --features cuda) and output as set up by
# scripts/gpu-common.sh: logs, JSON and TIMELINE files end up in $OUT/results.tgz.
what="${1:-all}"
source "$(dirname "$0")/gpu-common.sh"

if [[ $what == *proofs* || $what == all ]]; then
  # CUDA bytes == CPU bytes (synthetic, 2 KiB PoRep/PoSt/Snap), concurrent pinned workers,
  # streamed bases, a VRAM budget that forces waiting. Leaves params + fixtures in $work.
  RUST_LOG=warn run proofs 420 "$work/backend_check" "$work"
  grep -E "bytes equal|passed|tight|FAIL|Error|error" "$out/proofs.log" | tail -n 30
fi

if [[ $what == *daemon* || $what == all ]]; then
  # The four 2 KiB kinds through the daemon on the CUDA backend, verified by filecoin-proofs.
  daemon_up "$out/daemon.log" --backend cuda --listen 127.0.0.1:9820 \
    --http-listen 127.0.0.1:9821 --params "$work/params"
  for t in porep winning-post window-post snap; do
    run "batch-$t" 200 "$zk" bench batch --addr 127.0.0.1:9820 --type "$t" \
      --fixtures "$work/fixtures" --params "$work/params" -c 4 -j 2 --verify \
      --json "$out/batch-$t.json"
    tail -n 6 "$out/batch-$t.log"
  done
  http_status 9821 > "$out/status.json" 2>&1
  kill -TERM "$daemon"; wait "$daemon"
fi

if [[ $what == *stress* || $what == all ]]; then
  # 20 jobs × 4 partitions of 2^22 with a real key: all verify, VRAM peak within the budget.
  run stress 420 "$zk" bench pipeline --backend cuda --shape synthetic --log-size 22 \
    --jobs 20 --partitions 4 --prover-workers 2 --synthesis-workers 12 --timeline-dir "$out/stress"
  tail -n 5 "$out/stress.log"
fi

# PoRep-shaped partitions (tiled key): 1 vs 2 prover workers, busy fraction from TIMELINE.
if [[ $what == *bench* || $what == *b24* || $what == all ]]; then
  run bench24 300 "$zk" bench pipeline --backend cuda --shape porep --log-size 24 \
    --jobs 6 --partitions 4 --prover-workers 1,2 --synthesis-workers 6 --timeline-dir "$out/b24"
  grep -v TIMELINE "$out/bench24.log" | tail -n 5
fi
if [[ $what == *bench* || $what == *b26* || $what == all ]]; then
  run bench26 420 "$zk" bench pipeline --backend cuda --shape porep --log-size 26 \
    --jobs 3 --partitions 4 --prover-workers 1,2 --synthesis-workers 3 --memory-budget 56GiB \
    --staging-pool 16GiB --timeline-dir "$out/b26"
  grep -v TIMELINE "$out/bench26.log" | tail -n 5
fi
finish
