#!/usr/bin/env bash
# Creates the Python virtual environment used by the Cyclone DDS interop tests
# (crates/ferrodds/tests/interop_cyclone.rs) at target/peers-venv and installs
# the `cyclonedds` PyPI package into it, only when it is missing.
#
# Usage: scripts/setup-python-peers.sh
# Env:   PYTHON (interpreter used to create the venv, default python3)
#        CYCLONEDDS_VERSION (pip version spec, default 11.0.1)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/target/peers-venv"
python="${PYTHON:-python3}"
version="${CYCLONEDDS_VERSION:-11.0.1}"

if [ -x "${venv}/bin/python" ] && "${venv}/bin/python" -c 'import cyclonedds' 2>/dev/null; then
    echo "cyclonedds already installed in ${venv}"
    exit 0
fi

mkdir -p "${repo_root}/target"
if [ ! -x "${venv}/bin/python" ]; then
    "${python}" -m venv "${venv}"
fi
"${venv}/bin/python" -m pip install --quiet --upgrade pip
"${venv}/bin/python" -m pip install --quiet "cyclonedds==${version}"
"${venv}/bin/python" -c 'import cyclonedds, sys; print("cyclonedds", cyclonedds.__version__ if hasattr(cyclonedds, "__version__") else "?", "ready in", sys.prefix)'
