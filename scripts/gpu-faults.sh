#!/usr/bin/env bash
# GPU fault checks of issue 16, on a machine with a GPU, in under 3 minutes. Prints a PASS/FAIL
# table (also in $OUT/summary.txt); logs and JSON in $OUT/results.tgz.
#  gpu-fault  a daemon (CUDA backend) with ZKFORGE_FAULT=msm:3 proves 6 WinningPoSt jobs, 3 in
#             flight: exactly one fails with a message naming the injected fault, the other five
#             complete and filecoin-proofs accepts them; the next batch completes (still serving).
#  vram-hog   another process (gpu_bench hog) takes all free VRAM after the daemon opened the GPU
#             and before its first job, for 20 s: the jobs wait for room ("waiting for room" in the
#             daemon log), then complete and verify; the daemon is alive afterwards.
# Binaries, in $BIN as scripts/gpu-common.sh describes: zkforge built with fault injection
# (cargo build --release -p zkforge-cli --features cuda,fault-injection: the feature wraps the
# backend in zkforge_groth16::fault::FaultyBackend when ZKFORGE_FAULT is set; the product is
# built without it), and gpu_bench (cargo build --release -p zkforge-cuda --features cuda
# --examples).
source "$(dirname "$0")/gpu-common.sh"
hog_bin="$work/gpu_bench"
results=()

# result NAME PASS|FAIL DETAIL
result() {
  results+=("$(printf '%-10s %-5s %s' "$1" "$2" "$3")")
  echo "   ${results[-1]}" | tee -a "$out/summary.txt"  # now too: a lease may end before the table
  [ "$2" = PASS ] || rc=1
}

# json_num FILE KEY: a top-level number of a bench --json report.
json_num() { grep -m1 -E "^  \"$2\": " "$1" | grep -oE '[0-9]+' | head -n1; }

# start_daemon NAME PORT [ENV=VALUE...]: a CUDA daemon on 127.0.0.1:PORT, its pid in $daemon.
start_daemon() {
  local name=$1 port=$2; shift 2
  env "$@" "$zk" daemon --backend cuda --listen "127.0.0.1:$port" --params "$work/params" \
    > "$out/$name-daemon.log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 60); do port_open "$port" && return 0; sleep 1; done
  return 1
}

batch() { # batch NAME PORT COUNT CONCURRENCY
  timeout 150 "$zk" bench batch --addr "127.0.0.1:$2" --type winning-post \
    --fixtures "$work/fixtures" --params "$work/params" -c "$3" -j "$4" --verify \
    --json "$out/$1.json" > "$out/$1.log" 2>&1
}

run params 120 "$zk" params generate --proof winning-post --sector-size 2KiB --out "$work/params" --force
run fixtures 120 "$zk" fixtures --sector-size 2KiB --out "$work/fixtures"

# 1. An injected GPU failure in one partition.
if ! start_daemon fault 9830 ZKFORGE_FAULT=msm:3; then
  result gpu-fault FAIL "the daemon did not start (see fault-daemon.log)"
elif ! grep -q "ZKFORGE_FAULT armed" "$out/fault-daemon.log"; then
  result gpu-fault FAIL "no fault armed: zkforge was built without --features fault-injection"
  kill -TERM "$daemon"; wait "$daemon"
else
  batch fault-batch 9830 6 3
  done_n=$(json_num "$out/fault-batch.json" completed)
  failed_n=$(json_num "$out/fault-batch.json" failed)
  ok_n=$(json_num "$out/fault-batch.json" verified_ok)
  named=$(grep -c 'injected fault (ZKFORGE_FAULT): msm call 3 failed' "$out/fault-batch.json")
  batch fault-after 9830 2 2; after=$?
  kill -0 "$daemon" 2>/dev/null; alive=$?
  detail="completed ${done_n:-?}/6, failed ${failed_n:-?} (named: $named), verified ${ok_n:-?}, next batch rc=$after"
  if [ "${done_n:-0}" = 5 ] && [ "${failed_n:-0}" = 1 ] && [ "${ok_n:-0}" = 5 ] \
     && [ "$named" -ge 1 ] && [ "$after" = 0 ] && [ "$alive" = 0 ]; then
    result gpu-fault PASS "$detail"
  else
    result gpu-fault FAIL "$detail"
  fi
  kill -TERM "$daemon"; wait "$daemon"
fi

# 2. VRAM taken by another process mid-run.
if [ ! -x "$hog_bin" ]; then
  result vram-hog FAIL "gpu_bench missing in \$BIN"
elif start_daemon hog 9831; then
  "$hog_bin" hog 0 20 > "$out/hog.log" 2>&1 &
  hog=$!
  for _ in $(seq 1 30); do grep -q "HOG holding" "$out/hog.log" && break; sleep 1; done
  t0=$(date +%s)
  batch hog-batch 9831 4 2; batch_rc=$?
  took=$(( $(date +%s) - t0 ))
  wait "$hog"
  kill -0 "$daemon" 2>/dev/null; alive=$?
  ok_n=$(json_num "$out/hog-batch.json" verified_ok)
  waited=$(grep -c "waiting for room" "$out/hog-daemon.log")
  detail="$(grep -m1 HOG "$out/hog.log"); batch rc=$batch_rc in ${took} s, verified ${ok_n:-?}/4, waits logged: $waited"
  if [ "$batch_rc" = 0 ] && [ "${ok_n:-0}" = 4 ] && [ "$waited" -ge 1 ] && [ "$alive" = 0 ]; then
    result vram-hog PASS "$detail"
  else
    result vram-hog FAIL "$detail"
  fi
  kill -TERM "$daemon"; wait "$daemon"
else
  result vram-hog FAIL "the daemon did not start (see hog-daemon.log)"
fi

{
  echo
  echo "check      result detail"
  printf '%s\n' "${results[@]}"
} | tee -a "$out/summary.txt"
finish
