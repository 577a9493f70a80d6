#!/usr/bin/env bash
# Installs a pinned CUDA 13.0 compiler (nvcc + nvvm + headers) without root, into a venv kept
# per machine (default ~/.cache/zkforge/cuda-toolkit, or $ZKFORGE_CUDA_TOOLKIT), and prints
# the NVCC= line for `cargo build --features cuda`.
# Versions are pinned together: a mismatched nvvm makes ptxas fail with "Unsupported .version".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${ZKFORGE_CUDA_TOOLKIT:-${XDG_CACHE_HOME:-$HOME/.cache}/zkforge/cuda-toolkit}"
# An earlier layout kept it in the checkout: reuse it rather than download again.
if [ -z "${ZKFORGE_CUDA_TOOLKIT:-}" ] && [ ! -x "$venv/bin/python" ] && [ -x "$root/.toolchain/cuda/bin/python" ]; then
  venv="$root/.toolchain/cuda"
fi
pkgs=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96
      nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip show nvidia-cuda-nvcc 2>/dev/null | grep -q '^Version: 13.0.88$' \
   || ! "$venv/bin/python" -m pip show nvidia-nvvm 2>/dev/null | grep -q '^Version: 13.0.88$' \
   || ! "$venv/bin/python" -m pip show nvidia-cuda-cccl 2>/dev/null | grep -q '^Version: 13.0.85$'; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pkgs[@]}"
fi
site="$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
cu="$site/nvidia/cu13"
nvcc="$cu/bin/nvcc"
[ -x "$nvcc" ] || { echo "nvcc not found under $cu/bin" >&2; exit 1; }
# The wheels keep nvvm and ptxas beside nvcc but not always on the paths nvcc expects.
"$nvcc" --version | tail -n 2 >&2
# The kernels include sppark's field/curve headers from its crate source (build.rs looks in
# the cargo registry); fetch it once if this machine has never downloaded it.
if ! ls "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/sppark-0.1.16/sppark/ff/bls12-381.hpp >/dev/null 2>&1; then
  tmp="$(mktemp -d)"
  mkdir -p "$tmp/src" && echo 'fn main() {}' > "$tmp/src/main.rs"
  printf '[package]\nname = "sppark-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nsppark = "=0.1.16"\n' > "$tmp/Cargo.toml"
  (cd "$tmp" && cargo fetch -q) || echo "warning: could not fetch sppark 0.1.16; set SPPARK_DIR" >&2
  rm -rf "$tmp"
fi
echo "NVCC=$nvcc"
