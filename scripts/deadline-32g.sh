#!/usr/bin/env bash
# Deadlines under PoRep load at 32 GiB (issue 21 §3): a WindowPoSt, then WinningPoSts, submitted
# while a batch of 32 GiB PoRep C2 runs on the GPU. The PoRep key (44 GiB of bases) and the
# WindowPoSt key (~68 GiB) do not fit in VRAM together with their partitions: the WindowPoSt
# drains the PoRep key and takes its room, and the PoRep key comes back after
# (crates/cuda/src/resident.rs). Reports each proof's latency and that every proof verifies.
#
# Needs, from earlier calls on the same warm machine: `gpu-32g.sh gen` (PoRep fixtures and key
# on the disk) and `KINDS=window-post PARAMS_IN_RAM=80 KEEP=1 post-32g.sh` (the WindowPoSt set
# in the tmpfs $WORK/params-ram, its fixtures in $WORK/fx-post-32GiB). The WinningPoSt set
# (0.19 GB) is generated here. DELAY (default 40) seconds after the PoRep batch starts the
# WindowPoSt goes in, then TRIES (default 5) WinningPoSts one after another; PROOFS (default
# 6) PoRep proofs, 3 in flight. Host memory is the limit on the box (the WindowPoSt key sits
# in RAM): synthesis_workers 2 and prove_queue_depth 1 keep 5 partitions' buffers pinned.
source "$(dirname "$0")/gpu-common.sh"
params="$FIL_PROOFS_PARAMETER_CACHE"
ram="$work/params-ram"
fx="$work/fx32"
fxp="$work/fx-post-32GiB"
# Its own directory: `fixtures` writes the manifest of the kinds it makes, and the WindowPoSt
# inputs in $fxp must stay listed in theirs.
fxw="$work/fx-winning-32GiB"
free -g > "$out/memory.txt" 2>&1

# One directory for the daemon: the WindowPoSt set's files linked in beside the PoRep key.
for f in "$ram"/*; do
  [ -e "$f" ] && [ ! -e "$params/$(basename "$f")" ] && ln -s "$f" "$params/"
done
run fixtures-winning 120 "$zk" fixtures --sector-size 32GiB --out "$fxw" --seed 32 \
  --kinds winning-post
run params-winning 120 "$zk" params generate --proof winning-post --sector-size 32GiB \
  --backend cuda --seed 32 --out "$params" --force
ls -lL "$params" >> "$out/disk.txt" 2>&1

{ daemon_table "$params"; cat <<TOML; } > "$work/deadline.toml"
[engine]
synthesis_workers = ${SYNTH_WORKERS:-2}
prove_queue_depth = 1
[gpu]
params_residency = "vram"
TOML
daemon_up "$out/daemon.log" --config "$work/deadline.toml"

echo "== porep batch in the background" | tee -a "$out/summary.txt"
"$zk" bench batch --addr 127.0.0.1:9820 --type porep --fixtures "$fx" --params "$params" \
  -c "${PROOFS:-6}" -j 3 --verify --json "$out/porep.json" > "$out/porep.log" 2>&1 &
porep=$!
sleep "${DELAY:-40}"
run window 400 "$zk" bench batch --addr 127.0.0.1:9820 --type window-post --fixtures "$fxp" \
  --params "$params" -c 1 -j 1 --verify --json "$out/window.json"
tail -n 8 "$out/window.log" | tee -a "$out/summary.txt"
run winning 300 "$zk" bench batch --addr 127.0.0.1:9820 --type winning-post --fixtures "$fxw" \
  --params "$params" -c "${TRIES:-5}" -j 1 --verify --json "$out/winning.json"
tail -n 10 "$out/winning.log" | tee -a "$out/summary.txt"
wait "$porep" || { echo "   porep batch FAILED" | tee -a "$out/summary.txt"; rc=1; }
tail -n 12 "$out/porep.log" | tee -a "$out/summary.txt"

http_status 9821 > "$out/status.json" 2>&1
grep -oE '"(process_peak_rss_bytes|memory_budget_bytes|memory_peak_bytes|vram_reserved_bytes|residency)": ?("[^"]*"|[0-9]+)' \
  "$out/status.json" | tee -a "$out/summary.txt"
grep -E "evicted from the device|resident in VRAM|staged|read from its file" "$out/daemon.log" | cut -c1-400 \
  > "$out/residency.txt"
kill -TERM "$daemon"; wait "$daemon"
"$zk" timeline "$out/daemon.log" --svg "$out/timeline-deadline-32g.svg" > "$out/timeline.txt" 2>&1
tail -n 20 "$out/timeline.txt"
finish
