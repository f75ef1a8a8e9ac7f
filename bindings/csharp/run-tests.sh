#!/usr/bin/env bash
# Builds the C# binding (FerroDds.dll) and its self-checking test runner with Mono's mcs and
# runs the tests on loopback against the C API cdylib, the Rust shape_echo example and the Rust
# perftest (C# perftest <-> Rust perftest in both directions).
#   bash bindings/csharp/run-tests.sh [--release] [test-name-filter]
# Output: target/csharp/{FerroDds.dll,FerroDds.xml,FerroDds.Tests.exe,perftest_cs.exe}. Needs mono-devel.
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=debug cargo_flags=()
if [ "${1:-}" = --release ]; then profile=release cargo_flags=(--release); shift; fi
cargo build "${cargo_flags[@]}" --locked -p ferrodds-c
cargo build "${cargo_flags[@]}" --locked -p ferrodds --example shape_echo
cargo build "${cargo_flags[@]}" --locked -p ferrodds-perftest
out=target/csharp
mkdir -p "$out"
src=bindings/csharp
# -warnaserror: a public member without its XML doc comment (CS1591) fails the build.
mcs -nologo -unsafe -optimize+ -warnaserror+ -target:library -doc:"$out/FerroDds.xml" \
  -out:"$out/FerroDds.dll" "$src"/src/*.cs
mcs -nologo -unsafe -warnaserror+ -r:"$out/FerroDds.dll" -out:"$out/FerroDds.Tests.exe" "$src"/tests/*.cs
mcs -nologo -unsafe -optimize+ -warnaserror+ -r:"$out/FerroDds.dll" -out:"$out/perftest_cs.exe" "$src"/perftest/Perftest.cs
# The README's C# example, compiled and run (it must print what it received).
awk '/^## C#$/{c=1} c&&/^```csharp$/{e=1;next} e&&/^```$/{exit} e' README.md >"$out/readme_example.body"
{ echo 'using System; using FerroDds; static class ReadmeExample { static void Main() {'
  cat "$out/readme_example.body"; echo '} }'; } >"$out/ReadmeExample.cs"
mcs -nologo -warnaserror+ -r:"$out/FerroDds.dll" -out:"$out/ReadmeExample.exe" "$out/ReadmeExample.cs"
export LD_LIBRARY_PATH="$PWD/target/$profile${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FERRODDS_SHAPE_ECHO="$PWD/target/$profile/examples/shape_echo"
export FERRODDS_PERFTEST="$PWD/target/$profile/perftest"
export FERRODDS_PERFTEST_CS="$PWD/$out/perftest_cs.exe"
readme_out=$(timeout 30 mono "$out/ReadmeExample.exe")
[ "$readme_out" = "received x=42" ] || { echo "README C# example printed '$readme_out'" >&2; exit 1; }
echo "README C# example: $readme_out"
timeout 120 mono --debug "$out/FerroDds.Tests.exe" "$@"
