#!/usr/bin/env bash
# One command from a fresh Linux box to an installed zkforge service (docs/operations.md,
# "Install"). Run as root from a checkout:
#
#   scripts/install.sh [--cuda] [--prefix DIR] [--user NAME]
#
#   --cuda          build with the CUDA kernels (`--features cuda`): fetches the pinned CUDA
#                   compiler with scripts/install-cuda-toolkit.sh (pip wheels) and checks that
#                   nvcc accepts the host C++ compiler first. Without it the binary proves on
#                   the CPU only, and the config it installs says backend = "cpu".
#   --prefix DIR    install the binary as DIR/bin/zkforge (default /usr/local, the packaged
#                   unit's ExecStart); another prefix gets a unit drop-in pointing there.
#   --user NAME     the service user and group (default zkforge, the packaged unit's User=);
#                   another name gets the same drop-in.
#   --print-config  print the config a fresh install writes to /etc/zkforge/zkforge.toml, and
#                   nothing else (no root needed; crates/cli/tests/install_script.rs checks it).
#   --print-dropin  print the unit drop-in these options need (nothing when none), and exit.
#
# Steps, each printed with what it did or "unchanged": system packages (apt-get, for what is
# missing), Rust toolchain (rustup when cargo is missing), [--cuda: CUDA compiler, host
# compiler check], build, service user, directories, config (written only when absent: an
# operator's file is never replaced), binary, parameter directory, systemd unit, systemd
# (enable; it starts nothing: see the last lines it prints), `zkforge doctor`.
# A second run changes nothing: files are compared before they are copied, and cargo rebuilds
# only what changed. Where systemd is not running (a container, /run/systemd/system absent)
# the unit is still installed, and nothing is enabled or started.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
invocation="$0 $*"
cuda=0
prefix=/usr/local
user=zkforge
print=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda=1 ;;
    --prefix) prefix="${2:?--prefix needs a directory}"; shift ;;
    --prefix=*) prefix="${1#--prefix=}" ;;
    --user) user="${2:?--user needs a name}"; shift ;;
    --user=*) user="${1#--user=}" ;;
    --print-config) print=config ;;
    --print-dropin) print=dropin ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see scripts/install.sh --help)" >&2; exit 1 ;;
  esac
  shift
done
case "$prefix" in
  /*) prefix="${prefix%/}" ;;
  *) echo "install.sh: --prefix $prefix is not an absolute path" >&2; exit 1 ;;
esac

unit_src="$root/packaging/zkforge.service"
config_src="$root/packaging/zkforge.toml"
config_dst=/etc/zkforge/zkforge.toml
unit_dst=/etc/systemd/system/zkforge.service
# Not override.conf: that one is `systemctl edit zkforge`'s, the operator's.
dropin_dst=/etc/systemd/system/zkforge.service.d/10-install.conf
bin_dst="$prefix/bin/zkforge"
# The service user's home: where the daemon keeps circuit recordings when the parameter
# directory is not writable (~/.cache/zkforge/r1cs). A real directory, unlike /nonexistent.
state_dir=/var/lib/zkforge

step_no=0
changes=0
step() { step_no=$((step_no + 1)); echo; echo "==> [$step_no] $*"; }
same() { echo "    unchanged: $*"; }
did() { changes=$((changes + 1)); echo "    $*"; }
note() { echo "    $*"; }
die() { echo "install.sh: $*" >&2; exit 1; }

# A Key=value of the packaged unit (the first, for keys set once).
unit_value() { sed -n "s/^$1=//p" "$unit_src" | head -n 1; }

# Replaces the config line that is exactly $1 by a "# install.sh: $3" comment and $2. Fails
# when the line is not there, so that an edit of packaging/zkforge.toml cannot silently skip
# an adaptation (the test runs --print-config).
swap_line() {
  awk -v old="$1" -v new="$2" -v why="$3" '
    $0 == old { print "# install.sh: " why; print new; n++; next }
    { print }
    END { exit n == 1 ? 0 : 3 }'
}

# The packaged config, with the lines that could not start on this host as built changed;
# each change is marked in the file and said on stderr.
render_config() {
  local text budget_gib mem_kib fit_gib
  text="$(cat "$config_src")"
  if [ "$cuda" = 0 ]; then
    # A build without CUDA refuses backend = "cuda" at start.
    text="$(swap_line 'backend = "cuda"' 'backend = "cpu"' \
      'built without --cuda, so "cpu" (packaged: "cuda"); after scripts/install.sh --cuda, set "cuda"' \
      <<<"$text")" || die "packaging/zkforge.toml has no line 'backend = \"cuda\"': update render_config"
    echo "    adapted: backend = \"cpu\" (this build has no CUDA)" >&2
  fi
  budget_gib="$(sed -n 's/^memory_budget = "\([0-9]*\)GiB"$/\1/p' "$config_src")"
  [ -n "$budget_gib" ] || die "packaging/zkforge.toml has no line 'memory_budget = \"<N>GiB\"': update render_config"
  mem_kib="$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
  if [ $((budget_gib * 1024 * 1024)) -gt "$mem_kib" ]; then
    # A budget above the machine's memory is refused at start. The packaged file takes 96 of
    # 256 GiB beside Curio: the same 3/8 of this machine.
    fit_gib=$((mem_kib * 3 / 8 / 1024 / 1024))
    [ "$fit_gib" -ge 1 ] || fit_gib=1
    text="$(swap_line "memory_budget = \"${budget_gib}GiB\"" "memory_budget = \"${fit_gib}GiB\"" \
      "${budget_gib}GiB (packaged) is more than this machine's $((mem_kib / 1024 / 1024)) GiB: 3/8 of it, as the packaged 96 of 256; CHANGE it" \
      <<<"$text")"
    echo "    adapted: memory_budget = \"${fit_gib}GiB\" (the packaged ${budget_gib}GiB is more than this machine has)" >&2
  fi
  printf '%s\n' "$text"
}

# The group the service runs as: the user's own, once it exists.
service_group() { id -gn "$user" 2>/dev/null || echo "$user"; }

# The unit drop-in for a prefix or user other than the packaged unit's, empty when none.
render_dropin() {
  local exec bin args lines=""
  exec="$(unit_value ExecStart)"
  bin="${exec%% *}"
  args="${exec#* }"
  if [ "$bin_dst" != "$bin" ]; then
    # An empty ExecStart= clears the packaged one; a service may have only one.
    lines+=$'ExecStart=\n'"ExecStart=$bin_dst $args"$'\n'
  fi
  if [ "$user" != "$(unit_value User)" ]; then
    lines+="User=$user"$'\n'"Group=$(service_group)"$'\n'
  fi
  if [ -n "$lines" ]; then
    printf '# Written by scripts/install.sh (--prefix/--user): where it differs from the packaged unit.\n'
    printf '# Rerunning install.sh rewrites it; local changes belong in "systemctl edit zkforge".\n'
    printf '[Service]\n%s' "$lines"
  fi
}

case "$print" in
  config) render_config; exit 0 ;;
  dropin) render_dropin; exit 0 ;;
esac

[ "$(id -u)" = 0 ] || die "run as root (sudo $invocation): it creates a user and writes /etc, /var and $prefix"
{ [ -f "$unit_src" ] && [ -f "$config_src" ]; } \
  || die "run from a zkforge checkout: $unit_src or $config_src is missing"

# Installs file $1 as $2 with mode $3, owner $4, group $5, when its content or those differ.
# The new file is renamed into place: a running daemon keeps the binary it started from.
install_file() {
  local src="$1" dst="$2" mode="$3" owner="$4" group="$5" tmp
  if [ -f "$dst" ] && cmp -s "$src" "$dst"; then
    if [ "$(stat -c '%a %U %G' "$dst")" = "$mode $owner $group" ]; then
      same "$dst"
    else
      chmod "$mode" "$dst" && chown "$owner:$group" "$dst"
      did "updated: $dst (mode $mode, $owner:$group)"
    fi
    return
  fi
  local verb=installed
  [ -e "$dst" ] && verb=updated
  mkdir -p "$(dirname "$dst")"
  tmp="$(mktemp "$dst.install.XXXXXX")"
  install -m "$mode" -o "$owner" -g "$group" "$src" "$tmp"
  mv -f "$tmp" "$dst"
  did "$verb: $dst (mode $mode, $owner:$group)"
}

# Makes directory $1 with mode $2, owner $3, group $4, or sets those; $5 says what it is for.
ensure_dir() {
  local dir="$1" mode="$2" owner="$3" group="$4" why="$5"
  if [ ! -d "$dir" ]; then
    install -d -m "$mode" -o "$owner" -g "$group" "$dir"
    did "created: $dir ($mode $owner:$group): $why"
  elif [ "$(stat -c '%a %U %G' "$dir")" != "$mode $owner $group" ]; then
    chmod "$mode" "$dir" && chown "$owner:$group" "$dir"
    did "updated: $dir ($mode $owner:$group): $why"
  else
    same "$dir: $why"
  fi
}

systemd_running=0
[ -d /run/systemd/system ] && systemd_running=1

step "system packages"
missing=()
command -v cc >/dev/null || missing+=(build-essential)   # Rust's linker, blst's C code
if ! command -v cargo >/dev/null && [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
  command -v curl >/dev/null || missing+=(curl ca-certificates)   # for rustup
fi
if [ "$cuda" = 1 ]; then
  command -v g++ >/dev/null || [ -n "${NVCC_CCBIN:-}" ] || missing+=(g++)   # nvcc's host compiler
  command -v python3 >/dev/null || missing+=(python3)
  # Debian's python3 makes no venv without python3-venv (ensurepip).
  python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
fi
if [ ${#missing[@]} = 0 ]; then
  if [ "$cuda" = 1 ]; then same "cc, g++, python3 with venv present"; else same "cc present"; fi
elif command -v apt-get >/dev/null; then
  note "installing ${missing[*]} (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  did "installed: ${missing[*]}"
else
  die "missing ${missing[*]} and no apt-get: install them with this system's package manager, then rerun"
fi

step "Rust toolchain"
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! command -v cargo >/dev/null && [ -x "$cargo_bin/cargo" ]; then
  export PATH="$cargo_bin:$PATH"
fi
if command -v cargo >/dev/null; then
  same "$(cargo --version) ($(command -v cargo))"
else
  note "cargo not found: installing rustup's stable toolchain into $cargo_bin"
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs \
    | sh -s -- -y --profile minimal --default-toolchain stable --no-modify-path
  export PATH="$cargo_bin:$PATH"
  did "installed: $(cargo --version)"
fi
need="$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' "$root/Cargo.toml")"
have="$(rustc --version | awk '{ print $2 }')"
if [ -n "$need" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
  die "rustc $have is older than the $need this workspace needs: rustup update stable (or your distribution's newer Rust), then rerun"
fi

if [ "$cuda" = 1 ]; then
  step "CUDA compiler (scripts/install-cuda-toolkit.sh: pinned pip wheels, fetched once)"
  nvcc_line="$("$root/scripts/install-cuda-toolkit.sh" | tail -n 1)"
  [ "${nvcc_line#NVCC=}" != "$nvcc_line" ] || die "install-cuda-toolkit.sh printed no NVCC= line (it said: $nvcc_line)"
  export NVCC="${nvcc_line#NVCC=}"
  same "$NVCC ($("$NVCC" --version | sed -n 's/^Cuda compilation tools, //p'))"

  step "host compiler for nvcc"
  # nvcc preprocesses every .cu with a host compiler (g++ on PATH, or $NVCC_CCBIN, which
  # nvcc reads itself and cargo passes through build.rs) and refuses a GCC newer than it
  # knows: the curio#1225 trap, met on the newest distributions. Found here in a second
  # rather than after minutes of cargo.
  host="${NVCC_CCBIN:-g++}"
  probe="$(mktemp -d)"
  echo 'int main() { return 0; }' > "$probe/probe.cu"
  if said="$("$NVCC" -E "$probe/probe.cu" -o /dev/null 2>&1)"; then
    rm -rf "$probe"
    same "nvcc accepts $host ($("$host" -dumpfullversion 2>/dev/null || echo "version unknown"))"
  else
    rm -rf "$probe"
    max="$(sed -n 's/.*gcc versions later than \([0-9]*\) are not supported.*/\1/p' <<<"$said" | head -n 1)"
    if [ -n "$max" ]; then
      found=""
      for v in $(seq "$max" -1 9); do
        if command -v "g++-$v" >/dev/null; then found="$(command -v "g++-$v")"; break; fi
      done
      fix="apt-get install gcc-$max g++-$max, then: NVCC_CCBIN=/usr/bin/g++-$max $0 --cuda"
      [ -n "$found" ] && fix="$found is installed: NVCC_CCBIN=$found $0 --cuda"
      die "$host is GCC $("$host" -dumpfullversion 2>/dev/null), newer than this nvcc accepts (GCC $max at most; curio#1225). Fix: $fix"
    fi
    die "nvcc cannot preprocess a trivial .cu with $host: $said"
  fi
fi

step "build"
features=()
[ "$cuda" = 1 ] && features=(--features cuda)
built="${CARGO_TARGET_DIR:-$root/target}/release/zkforge"
before="$(sha256sum "$built" 2>/dev/null || true)"
(cd "$root" && cargo build --release --locked -p zkforge-cli --bin zkforge "${features[@]}")
after="$(sha256sum "$built")"
if [ "$before" = "$after" ]; then
  same "$built (up to date)"
else
  did "built: $built (sha256 ${after%% *})"
fi

step "service user"
if getent passwd "$user" >/dev/null; then
  same "user $user ($(id "$user"))"
else
  shell=/usr/sbin/nologin
  [ -x "$shell" ] || shell=/bin/false
  useradd --system --user-group --home-dir "$state_dir" --no-create-home --shell "$shell" "$user"
  did "created: system user $user ($(id "$user")), home $state_dir"
fi
group="$(service_group)"

step "directories"
ensure_dir /etc/zkforge 750 root "$group" "the config, readable by the service"
ensure_dir "$state_dir" 750 "$user" "$group" "the service user's home (circuit recordings when the parameter directory is read-only)"
cache_dir="/var/cache/$(unit_value CacheDirectory)"
ensure_dir "$cache_dir" 750 "$user" "$group" "the CUDA JIT cache (the unit's CUDA_CACHE_PATH)"
run_dir="/run/$(unit_value RuntimeDirectory)"
if [ "$systemd_running" = 1 ]; then
  note "$run_dir: made by systemd at each start (RuntimeDirectory), for the socket"
else
  # No systemd to make it: for a daemon started by hand. /run is emptied at boot.
  ensure_dir "$run_dir" 750 "$user" "$group" "the socket's directory (made by systemd where it runs; /run is emptied at boot)"
fi

step "config ($config_dst)"
if [ -e "$config_dst" ]; then
  same "$config_dst exists: kept as it is (never overwritten; the packaged one is packaging/zkforge.toml)"
else
  rendered="$(mktemp)"
  render_config > "$rendered"
  install_file "$rendered" "$config_dst" 640 root "$group"
  rm -f "$rendered"
  note "edit the lines marked CHANGE for this box (memory_budget, synthesis_threads, preload)"
fi
# The new binary must accept the config before it replaces the old one (as an upgrade by
# hand would check it), and the service user must be able to read it.
effective="$("$built" config print --config "$config_dst")" \
  || die "the new build refuses $config_dst (above): fix it, then rerun; the installed binary was left as it was"
runuser -u "$user" -- test -r "$config_dst" || die "$user cannot read $config_dst: chgrp $group $config_dst && chmod g+r $config_dst"
backend="$(sed -n 's/^backend = "\(.*\)"$/\1/p' <<<"$effective")"
note "accepted by the new build (zkforge config print): backend = \"$backend\""
if [ "$cuda" = 0 ] && [ "$backend" = cuda ]; then
  note "WARNING: backend = \"cuda\" and this build has no CUDA: the daemon will refuse to start; rerun with --cuda or set backend"
elif [ "$cuda" = 1 ] && [ "$backend" = cpu ]; then
  note "WARNING: backend = \"cpu\" and this build has CUDA: set backend = \"cuda\" in $config_dst to prove on the GPUs"
fi

step "binary ($bin_dst)"
install_file "$built" "$bin_dst" 755 root root
note "$("$bin_dst" --version), sha256 $(sha256sum "$bin_dst" | cut -c1-16)…"

step "parameter directory"
params="$(sed -n 's/^params = "\(.*\)"$/\1/p' <<<"$effective")"
if [ -z "$params" ]; then
  # daemon.params unset: the unit's environment says where.
  params="$(sed -n 's/^Environment=FIL_PROOFS_PARAMETER_CACHE=//p' "$unit_src")"
fi
if [ -d "$params" ]; then
  same "$params exists (owner $(stat -c %U:%G "$params")): kept as it is"
else
  ensure_dir "$params" 755 "$user" "$group" "the .params/.vk files (curio fetch-params or zkforge params put them here)"
fi
if runuser -u "$user" -- test -w "$params"; then
  note "$user can write there: circuit recordings (.r1cs) go beside the keys"
else
  note "$user cannot write there: recordings go to $state_dir/.cache/zkforge/r1cs (the daemon says so at start)"
fi

step "systemd unit"
before_unit=$changes
install_file "$unit_src" "$unit_dst" 644 root root
dropin="$(mktemp)"
render_dropin > "$dropin"
if [ -s "$dropin" ]; then
  install_file "$dropin" "$dropin_dst" 644 root root
elif [ -e "$dropin_dst" ]; then
  rm -f "$dropin_dst"
  rmdir --ignore-fail-on-non-empty "$(dirname "$dropin_dst")"
  did "removed: $dropin_dst (the packaged prefix and user again)"
else
  same "no drop-in needed (prefix $prefix, user $user: the packaged unit's)"
fi
rm -f "$dropin"
unit_changed=0
[ "$changes" = "$before_unit" ] || unit_changed=1

step "systemd"
if [ "$systemd_running" = 0 ]; then
  note "systemd is not running here (no /run/systemd/system): the unit is installed for when it is; nothing enabled or started"
  note "by hand: runuser -u $user -- $bin_dst daemon --config $config_dst"
else
  if [ "$unit_changed" = 1 ]; then
    systemctl daemon-reload
    did "systemctl daemon-reload"
  fi
  if systemctl is-enabled --quiet zkforge; then
    same "zkforge.service enabled"
  else
    systemctl enable --quiet zkforge
    did "enabled: zkforge.service (starts at boot)"
  fi
  # Starting is left to the operator: the config has lines to size first (CHANGE), and a
  # restart drains the jobs in flight (docs/operations.md, "Upgrading and restarting").
  if systemctl is-active --quiet zkforge; then
    note "running: restart it at a quiet moment for the new binary or unit: systemctl restart zkforge"
  else
    note "not started: after editing the config, systemctl start zkforge"
  fi
fi

step "zkforge doctor (as $user)"
set +e
runuser -u "$user" -- "$bin_dst" doctor --config "$config_dst" 2>&1 | sed 's/^/    | /'
doctor_rc=${PIPESTATUS[0]}
set -e
case "$doctor_rc" in
  0) note "doctor: something can prove here (exit 0)" ;;
  2) note "doctor: nothing can prove here yet (exit 2): its verdict above says what is missing; not an install failure" ;;
  *) die "zkforge doctor could not run (exit $doctor_rc): see above" ;;
esac

echo
if [ "$changes" = 0 ]; then
  echo "==> done: nothing changed (every step unchanged)"
else
  echo "==> done: $changes change(s)"
fi
