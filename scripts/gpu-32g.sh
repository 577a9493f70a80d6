#!/usr/bin/env bash
# Real 32 GiB PoRep C2 on a bare GPU box (issue #13), stage by stage so that a lease can split
# it over warm calls: STAGES from check, gen, prove, pipeline (default "gen,prove").
#   check     keygen_check (GPU key files byte-identical to the CPU's at 2 KiB, sampled at 2^24)
#             and backend_check (GPU proofs == CPU proofs: a, b, c uploaded, computed on the
#             device from the recorded matrices, and with the key read straight from its file)
#   gen       `zkforge fixtures --sector-size 32GiB` (sparse) and
#             `zkforge params generate --proof porep --sector-size 32GiB --backend cuda`
#   prove     the CUDA daemon, `bench batch --type porep -c $PROOFS -j $INFLIGHT --verify`
#             (filecoin-proofs' verify_seal), its status (peak RSS, VRAM) and TIMELINE
#   synth     `bench synthesis --reference --matrices`: the native assignment and the product
#             path's a, b, c against the reference constraint system on 32 GiB partitions
#             (every row compared by chunk digests), and their throughputs side by side
#   pipeline  `bench pipeline --shape porep --log-size 27` (tiled key, replayed witness)
#   pin       pin_bench: registering a 4 GiB witness buffer fresh, through the pool (faulted in
#             by 16 threads first) and after it was written, and what each does to kernels
#             running beside it (issue 24)
# PIN_AT_LOAD=true|false sets the daemon's engine.pin_buffers_at_load (default false).
# Disk: the 32 GiB key is 47 GB and its recorded matrices ~7 GB, on a 64 GiB disk: nothing
# else large may live in $WORK. Binaries and output as in scripts/gpu-common.sh.
what="${1:-gen,prove}"
source "$(dirname "$0")/gpu-common.sh"
fx="$work/fx32"
params="$FIL_PROOFS_PARAMETER_CACHE"
mkdir -p "$params"
df -h "$work" > "$out/disk.txt" 2>&1
free -g > "$out/memory.txt" 2>&1

if [[ $what == *check* ]]; then
  run keygen 300 "$work/keygen_check" "$work/keygen" 24
  grep -E "keygen|Error|error" "$out/keygen.log" | tail -n 5
  RUST_LOG=warn run proofs 420 "$work/backend_check" "$work/small"
  grep -E "bytes equal|passed|tight|FAIL|Error|error" "$out/proofs.log" | tail -n 24
  rm -rf "$work/small" "$work/keygen"
fi

if [[ $what == *gen* ]]; then
  run fixtures 120 "$zk" fixtures --sector-size 32GiB --out "$fx" --seed 32
  tail -n 4 "$out/fixtures.log"
  run params 560 "$zk" params generate --proof porep --sector-size 32GiB --backend cuda \
    --seed 32 --out "$params" --force
  tail -n 3 "$out/params.log"
  ls -l "$params" >> "$out/disk.txt"; df -h "$work" >> "$out/disk.txt"
fi

if [[ $what == *prove* ]]; then
  proofs="${PROOFS:-3}" inflight="${INFLIGHT:-2}"
  { daemon_table "$params"; cat <<TOML; } > "$work/daemon.toml"
[engine]
synthesis_workers = ${SYNTH_WORKERS:-4}
prover_workers_per_device = 2
prove_queue_depth = 2
pin_buffers_at_load = ${PIN_AT_LOAD:-false}
[gpu]
params_residency = "vram"
staging_pool = "64GiB"
TOML
  # Whether the key can come from the page cache (the upload's pace depends on it).
  grep -E "^(MemAvailable|Cached):" /proc/meminfo | tee -a "$out/summary.txt"
  daemon_up "$out/daemon.log" --config "$work/daemon.toml"
  run batch 540 "$zk" bench batch --addr 127.0.0.1:9820 --type porep --fixtures "$fx" \
    --params "$params" -c "$proofs" -j "$inflight" --verify --json "$out/batch.json"
  tail -n 12 "$out/batch.log"
  http_status 9821 > "$out/status.json" 2>&1
  grep -oE '"(process_peak_rss_bytes|memory_budget_bytes|memory_peak_bytes|vram_budget_bytes|vram_reserved_bytes)": ?[0-9]+' \
    "$out/status.json" | tee -a "$out/summary.txt"
  kill -TERM "$daemon"; wait "$daemon"
  grep -E "read from its file|staged on the devices" "$out/daemon.log" | sed 's/\x1b\[[0-9;]*m//g' \
    | cut -c1-400 | tee -a "$out/summary.txt"
  "$zk" timeline "$out/daemon.log" --svg "$out/timeline-32g.svg" > "$out/timeline.txt" 2>&1
  tail -n 25 "$out/timeline.txt"
fi

if [[ $what == *pin* ]]; then
  run pin 300 "$work/pin_bench" 4 "$out/pin.md"
  cat "$out/pin.md"
fi

if [[ $what == *synth* ]]; then
  r1cs=$(ls "$params"/*.r1cs | head -n1)
  run synthesis 420 "$zk" bench synthesis --c1 "$fx/porep-c1.json" --first 0 \
    --partitions "${SYNTH_PARTITIONS:-5}" --threads 16 --in-flight 2 --reference --matrices "$r1cs"
  tail -n 8 "$out/synthesis.log"
fi

if [[ $what == *pipeline* ]]; then
  run pipeline27 560 "$zk" bench pipeline --backend cuda --shape porep --log-size 27 \
    --jobs 1 --partitions 4 --prover-workers 2 --synthesis-workers 2 --timeline-dir "$out/p27"
  grep -v TIMELINE "$out/pipeline27.log" | tail -n 8
fi
finish
