#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + libFuzzer) in a build directory of their
# own and runs each for FUZZ_SECONDS (default 60) as the tests of suite 'fuzz'.
#   tests/fuzz/run.sh     (build dir: $MPIDIST_FUZZ_BUILD_DIR or build-fuzz)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${MPIDIST_FUZZ_BUILD_DIR:-$root/build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
  CC=$(command -v clang-14 || command -v clang) CXX=$(command -v clang++-14 || command -v clang++) \
    meson setup "$build" "$root" -Dfuzz=enabled -Dtests=disabled -Dbenchmarks=disabled -Dcuda=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dcpp_args=-fsanitize=fuzzer-no-link >/dev/null
fi
ninja -C "$build" tests/fuzz/fuzz_objects tests/fuzz/fuzz_trace
meson test -C "$build" --suite fuzz --print-errorlogs --verbose
