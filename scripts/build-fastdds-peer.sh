#!/usr/bin/env bash
# Builds the Fast DDS interop peer (interop/fastdds/peer.cpp) into target/peers/fastdds_peer,
# against Debian's libfastrtps-dev (Fast DDS 2.9; scripts/install-test-deps.sh installs it).
# Rebuilds only when the source is newer than the program.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/interop/fastdds/peer.cpp"
out="$root/target/peers/fastdds_peer"
if [ -x "$out" ] && [ "$out" -nt "$src" ]; then
  exit 0
fi
if [ ! -e /usr/include/fastdds/dds/domain/DomainParticipant.hpp ]; then
  echo "build-fastdds-peer: Fast DDS headers missing (apt-get install libfastrtps-dev)" >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
echo "build-fastdds-peer: g++ interop/fastdds/peer.cpp -> target/peers/fastdds_peer" >&2
g++ -O2 -std=c++17 -Wall -Wextra -Werror "$src" -o "$out.tmp" -lfastrtps -lfastcdr
mv "$out.tmp" "$out"
