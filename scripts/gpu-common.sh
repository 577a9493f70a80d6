# Shared set-up of the GPU scripts (sourced): binaries from $BIN (default .gpucheck/, *.gz
# unpacked) into $WORK, logs under $WORK/out, packed into $OUT/results.tgz by `finish`
# (the device tool brings back only a few files), with summary.txt beside it. zkforge is built
# with --features cuda; gpu-faults.sh needs --features cuda,fault-injection (test support that
# the product leaves out), which the other scripts run unchanged (no ZKFORGE_FAULT, no wrapper).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="${BIN:-.gpucheck}"
final="${OUT:-$root/gpu-out}"
work="${WORK:-/tmp/zkforge-gpu}"
out="$work/out"
mkdir -p "$final" "$out"
for f in "$bin"/*.gz; do
  [ -e "$f" ] && gzip -dc "$f" > "$work/$(basename "$f" .gz)" && chmod +x "$work/$(basename "$f" .gz)"
done
for b in zkforge backend_check keygen_check gpu_bench pin_bench; do [ -x "$work/$b" ] || cp "$bin/$b" "$work/$b" 2>/dev/null; done
zk="$work/zkforge"
export FIL_PROOFS_PARAMETER_CACHE="$work/params" ZKFORGE_CACHE="$work/cache" NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv \
  > "$out/gpu.txt" 2>&1
nproc >> "$out/gpu.txt"
rc=0

# run NAME TIMEOUT COMMAND...: logs to $out/NAME.log, records time and failure in the summary.
run() {
  local name=$1 t=$2; shift 2
  echo "== $name: $*" | tee -a "$out/summary.txt"
  local s=$(date +%s)
  timeout "$t" "$@" > "$out/$name.log" 2>&1 || { echo "   FAILED rc=$?" | tee -a "$out/summary.txt"; rc=1; }
  echo "   $(( $(date +%s) - s )) s" | tee -a "$out/summary.txt"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# GET http://127.0.0.1:$1/status without curl.
http_status() {
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET /status HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
  cat <&3; exec 3<&-
}

# daemon_table PARAMS [BACKEND]: the [daemon] table of the scripts' daemons: loopback gRPC on
# 9820, HTTP status on 9821 (what daemon_up and http_status use), parameters from PARAMS,
# BACKEND (default cuda). The scripts append their own [engine] and [gpu] tables.
daemon_table() {
  printf '[daemon]\nlisten = "127.0.0.1:9820"\nhttp_listen = "127.0.0.1:9821"\n'
  printf 'params = "%s"\nbackend = "%s"\n' "$1" "${2:-cuda}"
}

# daemon_up LOG ARGS...: `zkforge daemon ARGS` in the background, logging to LOG, its pid in
# $daemon; returns once its HTTP status (127.0.0.1:9821) answers, non-zero after 60 s without.
daemon_up() {
  local log=$1; shift
  "$zk" daemon "$@" > "$log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 60); do http_status 9821 > /dev/null 2>&1 && return 0; sleep 1; done
  return 1
}

finish() {
  echo "$(basename "$0"): rc=$rc" | tee -a "$out/summary.txt"
  cp "$out/summary.txt" "$final/summary.txt"
  tar czf "$final/results.tgz" -C "$work" out
  exit $rc
}
