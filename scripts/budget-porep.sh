#!/usr/bin/env bash
# Issue 16's memory-budget fault with the real circuit, by hand (CPU, ~25 s per proof on two
# cores, so not in CI): JOBS (default 100) 2 KiB PoRep C2 jobs submitted at once to a CPU
# daemon whose budget holds the key and 2.5 witnesses. Asserts: every job completes and
# filecoin-proofs accepts it, the budget's peak stays within it, and the daemon's VmHWM stays
# under its RSS before the jobs plus the budget plus MARGIN_MIB (default 256: allocator slack,
# gRPC buffers, the queued requests themselves, which the budget does not count).
# Usage: scripts/budget-porep.sh [WORKDIR]; ZK=path/to/zkforge (default target/release/zkforge).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
zk="${ZK:-$root/target/release/zkforge}"
work="${1:-$(mktemp -d)}"
jobs="${JOBS:-100}" margin_mib="${MARGIN_MIB:-256}"
params="${FIL_PROOFS_PARAMETER_CACHE:-$work/params}"
export FIL_PROOFS_PARAMETER_CACHE="$params"
mkdir -p "$work" "$params"

status() { # status PORT: GET /status
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET /status HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
  sed '1,/^\r$/d' <&3; exec 3<&-
}
field() { python3 -c "import json,sys; print(eval('json.load(sys.stdin)' + sys.argv[1]))" "$1"; }
daemon() { # daemon NAME PORT BUDGET: a CPU daemon; its pid in $pid
  cat > "$work/$1.toml" <<TOML
[daemon]
listen = "unix://$work/$1.sock"
http_listen = "127.0.0.1:$2"
params = "$params"
backend = "cpu"
[engine]
memory_budget = "$3"
TOML
  "$zk" daemon --config "$work/$1.toml" > "$work/$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 60); do status "$2" > /dev/null 2>&1 && return 0; sleep 1; done
  echo "the $1 daemon did not start: $work/$1.log" >&2; exit 1
}
batch() { # batch NAME SOCKET COUNT
  "$zk" bench batch --addr "unix:$2" --type porep --fixtures "$work/fx" --params "$params" \
    -c "$3" -j "$3" --verify --proof-timeout 7200 --json "$work/$1.json" > "$work/$1.out" 2>&1
}

"$zk" params generate --proof porep --sector-size 2KiB --out "$params" 2> "$work/params.err" \
  || grep -q "pass --force" "$work/params.err" || { cat "$work/params.err"; exit 1; }
[ -f "$work/fx/manifest.json" ] || "$zk" fixtures --sector-size 2KiB --out "$work/fx"

# 1. One job on an ample budget: the key's size and one witness's share.
daemon probe 9841 auto
batch probe "$work/probe.sock" 1
probe="$(status 9841)"
key=$(echo "$probe" | field "['loaded_srs'][0]['bytes']")
peak=$(echo "$probe" | field "['memory_peak_bytes']")
kill -TERM "$pid"; wait "$pid" || true
witness=$((peak - key))
budget=$((key + 5 * witness / 2))

# 2. JOBS at once on key + 2.5 witnesses.
daemon tight 9842 "$budget"
before=$(echo "$(status 9842)" | field "['process_rss_bytes']")
start=$(date +%s)
batch tight "$work/tight.sock" "$jobs"
took=$(( $(date +%s) - start ))
after="$(status 9842)"
kill -TERM "$pid"; wait "$pid" || true
completed=$(field "['completed']" < "$work/tight.json")
verified=$(field "['verified_ok']" < "$work/tight.json")
used_peak=$(echo "$after" | field "['memory_peak_bytes']")
hwm=$(echo "$after" | field "['process_peak_rss_bytes']")
limit=$((before + budget + margin_mib * 1048576))
mib() { echo $(( $1 / 1048576 )); }
printf '| jobs | key | witness | budget | budget peak | RSS before | VmHWM | limit | completed | verified | wall |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
printf '| %s | %s MiB | %s MiB | %s MiB | %s MiB | %s MiB | %s MiB | %s MiB | %s | %s | %s s |\n' \
  "$jobs" "$(mib "$key")" "$(mib "$witness")" "$(mib "$budget")" "$(mib "$used_peak")" \
  "$(mib "$before")" "$(mib "$hwm")" "$(mib "$limit")" "$completed" "$verified" "$took"
ok=1
[ "$completed" = "$jobs" ] && [ "$verified" = "$jobs" ] || { echo "FAIL: not every job verified"; ok=0; }
[ "$used_peak" -le "$budget" ] || { echo "FAIL: the budget's peak exceeds it"; ok=0; }
[ "$hwm" -le "$limit" ] || { echo "FAIL: VmHWM above RSS before + budget + margin"; ok=0; }
[ $ok = 1 ] && echo PASS
