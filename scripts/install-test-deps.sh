#!/usr/bin/env bash
# Installs, non-interactively and only when missing, everything the test suite needs:
#   - Debian packages: tshark (wire checks), cyclonedds-tools (ddsperf + libddsc, the peer DDS),
#     chromium (report rendering check), valgrind (callgrind guard), iproute2 (network-namespace tests), nftables (loss emulation without sch_netem), python3-venv (Cyclone's Python package for interop tests; maturin and pytest for the Python package),
#     libssl-dev + pkg-config (the `openssl` crate of ferrodds-security builds against the system OpenSSL)
#     mono-devel (mcs and mono: the C# binding, its tests and the C# perftest),
#     libfastrtps-dev + g++ (Fast DDS 2.9, the second peer DDS: interop/fastdds/peer.cpp)
#   - cargo-fuzz (fuzz targets run on stable with `-s none`)
# Safe to run repeatedly. Needs root (or sudo) for apt-get.
set -euo pipefail

need_pkgs=()
command -v tshark >/dev/null 2>&1 || need_pkgs+=(tshark)
command -v ddsperf >/dev/null 2>&1 || need_pkgs+=(cyclonedds-tools libddsc0debian)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v tc >/dev/null 2>&1 || need_pkgs+=(iproute2)
# nftables: random-drop loss emulation in test namespaces when the kernel has no sch_netem
command -v nft >/dev/null 2>&1 || need_pkgs+=(nftables)
# chromium: the lab's report test renders report.html headless and checks the screenshot
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
# libssl-dev + pkg-config: ferrodds-security (DDS Security) links the system OpenSSL
command -v pkg-config >/dev/null 2>&1 || need_pkgs+=(pkg-config)
pkg-config --exists openssl 2>/dev/null || need_pkgs+=(libssl-dev)
# openssl CLI: scripts/make-secure-resources.sh (its test regenerates perftest's secure folder)
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
# valgrind: the callgrind regression guard (instructions per round trip)
command -v valgrind >/dev/null 2>&1 || need_pkgs+=(valgrind)
# mono-devel: mcs builds bindings/csharp, mono runs its tests and the C# perftest
{ command -v mcs >/dev/null 2>&1 && command -v mono >/dev/null 2>&1; } || need_pkgs+=(mono-devel)
# libfastrtps-dev: eProsima Fast DDS, the peer of the interop_fastdds tests (built below)
[ -e /usr/include/fastdds/dds/domain/DomainParticipant.hpp ] || need_pkgs+=(libfastrtps-dev)
command -v g++ >/dev/null 2>&1 || need_pkgs+=(g++)

if ((${#need_pkgs[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "install-test-deps: apt-get install ${need_pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "install-test-deps: cargo install cargo-fuzz" >&2
  cargo install cargo-fuzz --locked --quiet
fi

# The Fast DDS peer program (target/peers/fastdds_peer), for the interop tests.
bash "$(dirname "$0")/build-fastdds-peer.sh"
# Cyclone DDS's Python package (its own libddsc) in target/peers-venv, for the interop tests.
bash "$(dirname "$0")/setup-python-peers.sh" >&2
# maturin (builds the Python package bindings/python), pytest (its tests) and mypy (stubtest
# checks its .pyi stubs against the module), same venv.
venv_py="$(dirname "$0")/../target/peers-venv/bin/python"
if ! "$venv_py" -c 'import pytest, mypy' >/dev/null 2>&1 || [ ! -x "$(dirname "$0")/../target/peers-venv/bin/maturin" ]; then
  echo "install-test-deps: pip install maturin pytest mypy (target/peers-venv)" >&2
  "$venv_py" -m pip install --quiet "maturin>=1.16,<1.17" "pytest>=7" "mypy>=1.10"
fi

# Every tool the tests need must now be on PATH (an install that silently failed would
# otherwise show up as skipped or failing tests far from its cause).
missing=()
for tool in tshark ddsperf ip tc nft chromium valgrind openssl mcs mono; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
cargo fuzz --version >/dev/null 2>&1 || missing+=(cargo-fuzz)
pkg-config --exists openssl 2>/dev/null || missing+=("libssl-dev (pkg-config openssl)")
"$(dirname "$0")/../target/peers-venv/bin/python" -c 'import cyclonedds' >/dev/null 2>&1 ||
  missing+=("cyclonedds (python, target/peers-venv)")
"$(dirname "$0")/../target/peers-venv/bin/python" -c 'import pytest, mypy' >/dev/null 2>&1 ||
  missing+=("pytest, mypy (python, target/peers-venv)")
[ -x "$(dirname "$0")/../target/peers-venv/bin/maturin" ] || missing+=("maturin (target/peers-venv)")
[ -x "$(dirname "$0")/../target/peers/fastdds_peer" ] || missing+=("fastdds_peer (target/peers)")
if ((${#missing[@]})); then
  echo "install-test-deps: still missing after installing: ${missing[*]}" >&2
  exit 1
fi
echo "install-test-deps: ok (tshark $(tshark --version | head -1 | awk '{print $3}'), $(cargo fuzz --version))" >&2
