#!/usr/bin/env bash
# The whole suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer, under
# mpiexec, with MPIDIST_VALIDATE=1 and a short watchdog (MPIDIST_TIMEOUT=60): one run proves
# both that nothing leaks or misbehaves and that the checks raise no false alarms.
#   tests/sanitize.sh [meson test arguments]     (build dir: $MPIDIST_SANITIZE_BUILD_DIR or build-sanitize)
# Leaks inside Open MPI's runtime are suppressed (tests/sanitizers/lsan.supp), never ours. The
# objects-huge suite (7 GB of payloads, minutes under ASan), packaging (it builds other projects)
# and compile-fail (it only compiles) are left to the plain build.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"   # packages, Open MPI settings, and the plain build
build=${MPIDIST_SANITIZE_BUILD_DIR:-$mpidist_root/build-sanitize}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$mpidist_root" -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C "$build"

# Full stacks for every allocation (fast_unwind_on_malloc=0): Open MPI is built without frame
# pointers and unloads its components at MPI_Finalize, so the fast unwinder stops at an anonymous
# frame and the suppressions below, which match library names, would find nothing to match.
export ASAN_OPTIONS=detect_leaks=1:detect_odr_violation=0:abort_on_error=0:strict_string_checks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$mpidist_root/tests/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=60
status=0
meson test -C "$build" --print-errorlogs --num-processes 2 --no-suite objects-huge --no-suite packaging \
  --no-suite compile-fail --timeout-multiplier 3 "$@" ||
  status=$?
exit "$status"
