#!/usr/bin/env bash
# Prepares a Python with grpcio (cached per machine, like the CUDA toolkit) and generates the
# cuzk.v1 stubs from our .proto; prints the PYTHON= and PYTHONPATH= lines to use.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${ZKFORGE_PY_GRPC:-${XDG_CACHE_HOME:-$HOME/.cache}/zkforge/py-grpc}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import grpc, grpc_tools' 2>/dev/null; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check grpcio==1.85.1 grpcio-tools==1.85.1
fi
stubs="${1:-$(mktemp -d)}"
mkdir -p "$stubs"
"$venv/bin/python" -m grpc_tools.protoc -I "$root/crates/server/proto" \
  --python_out="$stubs" --grpc_python_out="$stubs" cuzk/v1/proving.proto
touch "$stubs/cuzk/__init__.py" "$stubs/cuzk/v1/__init__.py"
echo "PYTHON=$venv/bin/python"
echo "PYTHONPATH=$stubs"
