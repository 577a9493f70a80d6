#!/usr/bin/env bash
# A good neighbour on the provider's host (issue 48), a 32 GiB PoRep on the device box with the
# daemon's default configuration. STAGES (default "gen,squeeze,full"):
#   gen      sparse 32 GiB fixtures and the 32 GiB PoRep key (generated on the GPU)
#   doctor   `zkforge doctor` with the key in place
#   base16   the BASE build on the 16 GiB card without the squeeze (the s/proof to compare with)
#   squeeze  a 16 GiB card (scripts/hold-vram.py holds the rest); `bench batch -c $PROOFS -j 3
#            --verify`; $SQUEEZE_AFTER s into it (default 90) another process takes and touches
#            $SQUEEZE GiB of host memory (default 24; "24 30 24": 24, then 24 more 30 s later)
#            with oom_score_adj -1000 (scripts/hold-host-memory.py) and holds it to the end
#   full     the whole card, no squeeze
#   host     a smaller host: another process holds all but $HOST_GIB GiB (default 64) of the
#            host's memory from the start, on a $HOST_CARD GiB card (default 24)
# Each run reports s/proof (batch and TIMELINE steady state), the daemon's peak RSS, page-locked
# bytes, partitions in flight (median and most, from SYNTH_START to PROVE_END), every host
# memory change the daemon logged, and any OOM kill. BASE=FILE.gz (another build's CLI) runs
# each card with that build first (without the squeeze), on the same key, side by side.
what="${1:-gen,squeeze,full}"
source "$(dirname "$0")/gpu-common.sh"
fx="$work/fx32"
params="$FIL_PROOFS_PARAMETER_CACHE"
mkdir -p "$params"
free -g > "$out/memory.txt" 2>&1

if [[ $what == *gen* ]]; then
  [ -f "$fx/manifest.json" ] || run fixtures 120 "$zk" fixtures --sector-size 32GiB --out "$fx" --kinds porep --seed 32
  ls "$params"/*.params > /dev/null 2>&1 || run params 560 "$zk" params generate --proof porep \
    --sector-size 32GiB --backend cuda --seed 32 --out "$params" --force
  tail -n 3 "$out/params.log" 2>/dev/null
fi
# What `zkforge doctor` says of this box with the key in place (issue 50's GPU output).
if [[ $what == *doctor* ]]; then
  run doctor 180 "$zk" doctor --params "$params"
  cat "$out/doctor.log" >> "$out/summary.txt"
fi

# Partitions between SYNTH_START and PROVE_END in a daemon log: median and most, over the
# moments each partition started.
in_flight() {
  python3 - "$1" <<'PY'
import json, re, sys, statistics
ev = []
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"TIMELINE (\{.*\})", line)
    if m:
        e = json.loads(m.group(1))
        if e["event"] in ("SYNTH_START", "PROVE_END") and "partition" in e:
            ev.append((e["t_ms"], e["event"], e["job"], e["partition"]))
ev.sort()
live, counts = set(), []
for t, kind, job, k in ev:
    if kind == "SYNTH_START":
        live.add((job, k)); counts.append(len(live))
    else:
        live.discard((job, k))
if counts:
    print(f"partitions in flight: median {statistics.median(counts)}, most {max(counts)}")
PY
}

# run_card TAG GIB_FREE [HOST_HOLD] [SQUEEZE...]: one batch with the binary $zk.
run_card() {
  local tag=$1 free=$2 hosthold=$3; shift 3
  local holder="" hog="" squeezer="" poll
  if [ -n "$free" ]; then
    python3 "$root/scripts/hold-vram.py" "$free" > "$out/holder-$tag.log" 2>&1 &
    holder=$!
    for _ in $(seq 1 60); do grep -q holding "$out/holder-$tag.log" && break; sleep 1; done
    cat "$out/holder-$tag.log" | tee -a "$out/summary.txt"
  fi
  if [ -n "$hosthold" ]; then
    python3 "$root/scripts/hold-host-memory.py" "leave:$hosthold" > "$out/host-$tag.log" 2>&1 &
    hog=$!
    for _ in $(seq 1 120); do grep -q holding "$out/host-$tag.log" && break; sleep 1; done
    cat "$out/host-$tag.log" | tee -a "$out/summary.txt"
  fi
  daemon_table "$params" > "$work/daemon-$tag.toml"
  daemon_up "$out/daemon-$tag.log" --config "$work/daemon-$tag.toml"
  # The daemon's RSS and the host's MemAvailable (KiB), every second.
  ( while sleep 1; do echo "$(date +%s) $(awk '/^VmRSS/ {print $2}' /proc/$daemon/status 2>/dev/null) $(awk '/MemAvailable/ {print $2}' /proc/meminfo)"; done ) \
    > "$out/rss-$tag.txt" 2>&1 &
  poll=$!
  if [ $# -gt 0 ]; then
    ( sleep "${SQUEEZE_AFTER:-90}"; exec python3 "$root/scripts/hold-host-memory.py" "$@" ) \
      > "$out/squeeze-$tag.log" 2>&1 &
    squeezer=$!
  fi
  run "batch-$tag" 590 "$zk" bench batch --addr 127.0.0.1:9820 --type porep --fixtures "$fx" \
    --params "$params" -c "${PROOFS:-6}" -j 3 --verify --json "$out/batch-$tag.json"
  tail -n 8 "$out/batch-$tag.log" | tee -a "$out/summary.txt"
  [ -n "$squeezer" ] && { cat "$out/squeeze-$tag.log" | tee -a "$out/summary.txt"; pkill -P "$squeezer" 2>/dev/null; kill "$squeezer" 2>/dev/null; }
  http_status 9821 > "$out/status-$tag.json" 2>&1
  grep -oE '"(process_peak_rss_bytes|memory_budget_bytes|memory_limit_bytes|memory_peak_bytes|pinned_memory_bytes)": ?[0-9]+' \
    "$out/status-$tag.json" | tee -a "$out/summary.txt"
  grep -oE '"pipeline_depth": ?\[[^]]*\]' "$out/status-$tag.json" | cut -c1-400 | tee -a "$out/summary.txt"
  kill -TERM "$daemon"; wait "$daemon"
  kill "$poll" 2>/dev/null
  [ -n "$hog" ] && kill "$hog" 2>/dev/null
  [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
  in_flight "$out/daemon-$tag.log" | tee -a "$out/summary.txt"
  echo "peak daemon RSS $(sort -k2 -n "$out/rss-$tag.txt" | tail -n1 | awk '{printf "%.1f GB", $2*1024/1e9}'), least MemAvailable $(sort -k3 -n "$out/rss-$tag.txt" | head -n1 | awk '{printf "%.1f GB", $3*1024/1e9}')" \
    | tee -a "$out/summary.txt"
  sed 's/\x1b\[[0-9;]*m//g' "$out/daemon-$tag.log" \
    | grep -E "pipeline depth|host memory|placement at start|killed|panicked|ERROR" | cut -c1-400 \
    | tee -a "$out/summary.txt"
  "$zk" timeline "$out/daemon-$tag.log" > "$out/timeline-$tag.txt" 2>&1
  grep -iE "steady|cycle|s/proof|first proof" "$out/timeline-$tag.txt" | head -n 8 | tee -a "$out/summary.txt"
  dmesg 2>/dev/null | grep -iE "out of memory|killed process" | tail -n 3 | tee -a "$out/summary.txt"
}

# card TAG GIB_FREE [HOST_HOLD] [SQUEEZE...]: the base build first (BASE), then this one.
card() {
  if [ -n "${BASE:-}" ]; then
    mkdir -p "$work/base"
    [ -x "$work/base/zkforge" ] || { gzip -dc "$BASE" > "$work/base/zkforge" && chmod +x "$work/base/zkforge"; }
    local this="$zk"; zk="$work/base/zkforge"
    local tag=$1; shift
    # The base build without the squeeze: the figure to compare s/proof with (a squeeze
    # OOM-killed it: the issue's "before").
    run_card "base-$tag" "$1" "$2"
    zk="$this"
    run_card "$tag" "$@"
  else
    run_card "$@"
  fi
}

[[ $what == *squeeze* ]] && run_card 16g-squeeze 16 "" ${SQUEEZE:-24}
# The base build on the 16 GiB card, unsqueezed: the s/proof to compare with.
if [[ $what == *base16* ]]; then
  mkdir -p "$work/base"
  gzip -dc "$BASE" > "$work/base/zkforge" && chmod +x "$work/base/zkforge"
  this="$zk"; zk="$work/base/zkforge"; run_card base-16g 16 ""; zk="$this"
fi
[[ $what == *full* ]] && card full "" ""
[[ $what == *host* ]] && card "host${HOST_GIB:-64}" "${HOST_CARD:-24}" "${HOST_GIB:-64}"
finish
