#!/usr/bin/env bash
# The whole suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer, under
# mpiexec, with MPIDIST_VALIDATE=1 and a short watchdog (MPIDIST_TIMEOUT=60): one run proves
# both that nothing leaks or misbehaves and that the checks raise no false alarms.
#   tests/sanitize.sh [meson test arguments]     (build dir: $MPIDIST_SANITIZE_BUILD_DIR or build-sanitize)
#   tests/sanitize.sh --plain < NAMES            (of the test names on stdin, the ones the plain run keeps)
# Leaks inside Open MPI's runtime are suppressed (tests/sanitizers/lsan.supp), never ours.
# Without arguments it runs every run of the suite but the ones below, which stay with the plain
# runs: objects-huge (7 GB of payloads, minutes under ASan), packaging (it builds other projects,
# which do not take the sanitizers), compile-fail (it only compiles) and the benchmarks (not built
# here: their smoke tests start 40 jobs, 4 minutes under ASan, through library paths the suites
# take). When both run, tests/run.sh's plain Open MPI run keeps only these (--plain): every run
# still happens once on Open MPI, and all of them plain on MPICH.
set -euo pipefail
plain_only='^(objects-huge-np2|subproject-consumer|install-pkgconfig|cmake-package|readme-consumer|compile-fail-.*|bench-.*)$'
# Runs with cases that skip under MPIDIST_VALIDATE=1 (objects' crafted frames bypass the
# agreement): the plain Open MPI run keeps them too.
also_plain='^(objects-np4)$'
if [ "${1:-}" = --plain ]; then
  grep -E "$plain_only|$also_plain" || true
  exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"   # packages, Open MPI settings, and the plain build
build=${MPIDIST_SANITIZE_BUILD_DIR:-$mpidist_root/build-sanitize}
# -O1 and line tables only (-g1): the build takes 0.6 of the time of -O2 -g under the sanitizers,
# and reports still name file and line.
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$mpidist_root" -Db_sanitize=address,undefined -Db_lundef=false \
    -Doptimization=1 -Ddebug=false -Dcpp_args=-g1 -Dbenchmarks=disabled >/dev/null
fi
ninja -C "$build"

# Full stacks for every allocation (fast_unwind_on_malloc=0): Open MPI is built without frame
# pointers and unloads its components at MPI_Finalize, so the fast unwinder stops at an anonymous
# frame and the suppressions below, which match library names, would find nothing to match.
export ASAN_OPTIONS=detect_leaks=1:detect_odr_violation=0:abort_on_error=0:strict_string_checks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$mpidist_root/tests/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=60
if [ $# -eq 0 ]; then
  mapfile -t runs < <(mpidist_test_names "$build" | grep -vE "$plain_only")
  set -- "${runs[@]}"
fi
status=0
meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier 3 "$@" || status=$?
exit "$status"
