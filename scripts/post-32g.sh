#!/usr/bin/env bash
# WinningPoSt, WindowPoSt and SnapDeals at 32 GiB (issue #17), kind by kind: sparse fixtures,
# `zkforge params generate`, the daemon on $BACKEND, `bench batch --verify` (filecoin-proofs'
# verifiers), status and TIMELINE. KINDS (default "winning-post window-post snap"), BACKEND
# (cuda | cpu; default cuda), PROOFS per kind (default 2), SIZE (default 32GiB),
# SYNTH_WORKERS (default: the daemon's default configuration).
# Disk: a 32 GiB SnapDeals key is ~34 GB beside its recorded matrices; on the device's 64 GiB
# disk one kind's files live at a time (KEEP=1 keeps them). A 32 GiB WindowPoSt key (~73 GB:
# A, B_G1 and L of ~125 M points each, H of 2^27, B_G2 dense at 192 bytes a point) does not fit
# that disk at all: PARAMS_IN_RAM=GIB stages the parameter directory in a tmpfs of that many
# GiB (host memory) at $WORK/params-ram and moves each recorded matrix file to the disk,
# leaving a link. A test path for a box without the disk a real deployment has: the daemon's
# "auto" memory budget starts from MemAvailable, which the tmpfs's pages are not part of.
# HOLD=N: a second process holds all but N GiB of the card while each kind's daemon runs
# (scripts/hold-vram.py), so the daemon meets an N GiB card (issue 35).
# BINS="zkforge zkforge-b" with ROUNDS=R: the daemons of those binaries of $BIN take turns on
# each kind's one key, R rounds (A B A B ...): two builds side by side in one run. Each turn's
# files are named with the kind and, beyond the first binary, the binary's name.
# On the CPU (BIN=target/release BACKEND=cpu KINDS=winning-post) this runs on any machine;
# the larger kinds need the GPU path's generation and memory. Output as in gpu-common.sh.
source "$(dirname "$0")/gpu-common.sh"
kinds="${KINDS:-winning-post window-post snap}"
backend="${BACKEND:-cuda}"
bins="${BINS:-zkforge}"
size="${SIZE:-32GiB}"
fx="$work/fx-post-$size"
params="$FIL_PROOFS_PARAMETER_CACHE"
if [ -n "${PARAMS_IN_RAM:-}" ]; then
  # Beside, not over, the disk's parameter directory: scripts/deadline-32g.sh links this set
  # into it next to the PoRep key.
  params="$work/params-ram"
  mkdir -p "$params" "$work/matrices"
  mountpoint -q "$params" || mount -t tmpfs -o "size=${PARAMS_IN_RAM}g" tmpfs "$params" \
    || { echo "no tmpfs for the parameters" | tee -a "$out/summary.txt"; rc=1; finish; }
fi
mkdir -p "$params"
# With the parameters in RAM: each recorded matrix file (~10 GB for WindowPoSt) goes to the
# disk as soon as it is written, before the key is, leaving a link the daemon reads through.
spill_matrices() {
  for m in "$params"/*.r1cs; do
    [ -f "$m" ] && [ ! -L "$m" ] && mv "$m" "$work/matrices/" \
      && ln -s "$work/matrices/$(basename "$m")" "$m"
  done
}
free -g > "$out/memory.txt" 2>&1

run fixtures 300 "$zk" fixtures --sector-size "$size" --out "$fx" --seed 32 \
  --kinds "$(echo "$kinds" | tr ' ' ',')"
tail -n 6 "$out/fixtures.log"

for kind in $kinds; do
  spiller=""
  if [ -n "${PARAMS_IN_RAM:-}" ]; then
    (while sleep 2; do spill_matrices; done) & spiller=$!
  fi
  run "params-$kind" 560 "$zk" params generate --proof "$kind" --sector-size "$size" \
    --backend "$backend" --seed 32 --out "$params" --force
  tail -n 2 "$out/params-$kind.log" | tee -a "$out/summary.txt"
  if [ -n "$spiller" ]; then kill "$spiller"; wait "$spiller" 2>/dev/null; spill_matrices; fi
  ls -l "$params" >> "$out/disk.txt" 2>&1
  df -h "$work" "$params" >> "$out/disk.txt" 2>&1
  free -g >> "$out/memory.txt" 2>&1

  # The default configuration unless SYNTH_WORKERS is given (issue 35's figures are the
  # default's).
  { daemon_table "$params" "$backend"
    if [ -n "${SYNTH_WORKERS:-}" ]; then
      printf '[engine]\nsynthesis_workers = %s\n' "$SYNTH_WORKERS"
    fi
  } > "$work/daemon-$kind.toml"
  for round in $(seq 1 "${ROUNDS:-1}"); do for b in $bins; do
    # The first binary's files keep the names of a one-binary run.
    tag="$kind"; [ "$b" = "${bins%% *}" ] || tag="$kind-$b"
    [ "${ROUNDS:-1}" = 1 ] || tag="$tag-r$round"
    echo "== $b, round $round" | tee -a "$out/summary.txt"
    holder=""
    if [ -n "${HOLD:-}" ]; then
      python3 "$root/scripts/hold-vram.py" "$HOLD" > "$out/holder-$tag.log" 2>&1 &
      holder=$!
      for _ in $(seq 1 60); do grep -q holding "$out/holder-$tag.log" && break; sleep 1; done
      tee -a "$out/summary.txt" < "$out/holder-$tag.log"
    fi
    zk="$work/$b" daemon_up "$out/daemon-$tag.log" --config "$work/daemon-$kind.toml"
    run "batch-$tag" 560 "$zk" bench batch --addr 127.0.0.1:9820 --type "$kind" --fixtures "$fx" \
      --params "$params" -c "${PROOFS:-2}" -j 1 --verify --json "$out/batch-$tag.json"
    tail -n 10 "$out/batch-$tag.log" | tee -a "$out/summary.txt"
    http_status 9821 > "$out/status-$tag.json" 2>&1
    grep -oE '"(process_peak_rss_bytes|memory_peak_bytes|vram_reserved_bytes)": ?[0-9]+' \
      "$out/status-$tag.json" | tee -a "$out/summary.txt"
    kill -TERM "$daemon"; wait "$daemon"
    [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
    grep -E "read from its file|placement|page-locked|on the device|killed|panicked|ERROR" \
      "$out/daemon-$tag.log" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-500 | tee -a "$out/summary.txt"
    "$zk" timeline "$out/daemon-$tag.log" --svg "$out/timeline-$tag-$size.svg" \
      > "$out/timeline-$tag.txt" 2>&1
    tail -n 8 "$out/timeline-$tag.txt"
  done; done
  # The next kind's key needs the disk; the .vk files stay for later verification.
  [ "${KEEP:-0}" = 1 ] || find "$params" "$work/matrices" -name '*.params' -o -name '*.r1cs' \
    2>/dev/null | xargs -r rm -f
done
finish
