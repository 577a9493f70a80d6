#!/usr/bin/env bash
# Real 32 GiB PoRep C2 on the cards storage providers own (issue #35), on the H200 box: a
# second process holds all but N GiB of the card in one plain allocation (scripts/hold-vram.py),
# so the limit is the card's; the daemon runs its default configuration. STAGES (default
# "check,gen,cards"):
#   check   backend_check's phased checks: every placement of the phased order (key streamed,
#           matrices resident or streamed, mixed) byte-equal to the CPU on synthetic circuits
#   gen     sparse 32 GiB fixtures and the 32 GiB PoRep key (generated on the GPU)
#   cards   for each N in $CARDS (default "48 24 16"): the holder, the daemon (default config),
#           `bench batch --type porep -c $PROOFS -j $INFLIGHT --verify`, /status, the device's
#           memory in use every second, the TIMELINE waterfall
#   full    the same with no holder: the full card, for the regression against the resident
#           order; with BASE=FILE.gz (another build's CLI, gzipped) that build runs the full
#           card first, then this one, side by side in the same call
# Binaries as in scripts/gpu-common.sh ($BIN, default .gpucheck/). Output: $OUT/summary.txt,
# $OUT/results.tgz.
what="${1:-check,gen,cards}"
source "$(dirname "$0")/gpu-common.sh"
fx="$work/fx32"
params="$FIL_PROOFS_PARAMETER_CACHE"
mkdir -p "$params"
free -g > "$out/memory.txt" 2>&1

if [[ $what == *check* ]]; then
  RUST_LOG=warn run phased-check 300 "$work/backend_check" "$work/small" phased
  grep -E "bytes equal|passed|Error|error" "$out/phased-check.log" | tail -n 12
  rm -rf "$work/small"
fi

if [[ $what == *gen* ]]; then
  [ -f "$fx/manifest.json" ] || run fixtures 120 "$zk" fixtures --sector-size 32GiB --out "$fx" --seed 32
  ls "$params"/*.params > /dev/null 2>&1 || run params 560 "$zk" params generate --proof porep \
    --sector-size 32GiB --backend cuda --seed 32 --out "$params" --force
  tail -n 3 "$out/params.log" 2>/dev/null
  df -h "$work" >> "$out/disk.txt"
fi

# One card: $1 = GiB left free (empty: the whole card); $2 = the run's tag (default the GiB,
# or "full").
card() {
  local free=$1 tag=${2:-${1:-full}} holder="" poll
  if [ -n "$free" ]; then
    python3 "$root/scripts/hold-vram.py" "$free" > "$out/holder-$tag.log" 2>&1 &
    holder=$!
    for _ in $(seq 1 60); do grep -q holding "$out/holder-$tag.log" && break; sleep 1; done
    cat "$out/holder-$tag.log" | tee -a "$out/summary.txt"
  fi
  daemon_table "$params" > "$work/daemon-$tag.toml"
  ( while sleep 1; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; done ) \
    > "$out/vram-$tag.txt" 2>&1 &
  poll=$!
  daemon_up "$out/daemon-$tag.log" --config "$work/daemon-$tag.toml"
  run "batch-$tag" 560 "$zk" bench batch --addr 127.0.0.1:9820 --type porep --fixtures "$fx" \
    --params "$params" -c "${PROOFS:-6}" -j "${INFLIGHT:-3}" --verify --json "$out/batch-$tag.json"
  tail -n 12 "$out/batch-$tag.log"
  http_status 9821 > "$out/status-$tag.json" 2>&1
  grep -oE '"(process_peak_rss_bytes|memory_budget_bytes|memory_peak_bytes|vram_budget_bytes|vram_reserved_peak_bytes)": ?[0-9]+' \
    "$out/status-$tag.json" | tee -a "$out/summary.txt"
  kill -TERM "$daemon"; wait "$daemon"
  kill "$poll" 2>/dev/null
  [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
  echo "peak device memory in use (MiB, holder included): $(sort -n "$out/vram-$tag.txt" | tail -n1)" \
    | tee -a "$out/summary.txt"
  sed 's/\x1b\[[0-9;]*m//g' "$out/daemon-$tag.log" \
    | grep -E "GPU ready|placement|page-locked|on the device|killed|panicked|ERROR" | cut -c1-600 \
    | tee -a "$out/summary.txt"
  "$zk" timeline "$out/daemon-$tag.log" --svg "$out/timeline-$tag.svg" > "$out/timeline-$tag.txt" 2>&1
  head -n 40 "$out/timeline-$tag.txt" | tee -a "$out/summary.txt"
  dmesg 2>/dev/null | grep -iE "out of memory|killed process" | tail -n 3 | tee -a "$out/summary.txt"
}

if [[ $what == *cards* ]]; then
  for n in ${CARDS:-48 24 16}; do card "$n"; done
fi
if [[ $what == *full* ]]; then
  if [ -n "${BASE:-}" ]; then
    mkdir -p "$work/base"
    gzip -dc "$BASE" > "$work/base/zkforge" && chmod +x "$work/base/zkforge"
    this="$zk"; zk="$work/base/zkforge"
    card "" base
    zk="$this"
  fi
  card ""
fi
finish
