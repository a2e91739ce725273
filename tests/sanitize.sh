#!/usr/bin/env bash
# The whole suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer, under
# mpiexec, with MPIDIST_VALIDATE=1 and a short watchdog (MPIDIST_TIMEOUT=60): one run proves
# both that nothing leaks or misbehaves and that the checks raise no false alarms.
#   tests/sanitize.sh [meson test arguments]     (build dir: $MPIDIST_SANITIZE_BUILD_DIR or build-sanitize)
#   tests/sanitize.sh --list                     (the selection's runs that the plain Open MPI run may leave out)
# Leaks inside Open MPI's runtime are suppressed (tests/sanitizers/lsan.supp), never ours.
# Without arguments it runs every test program and scenario of the suite once, at its richest
# rank counts (the plain runs cover every count): about half the plain suite's jobs, so that CI
# stays within its time. objects-huge (7 GB of payloads, minutes under ASan), packaging (it builds
# other projects), compile-fail (it only compiles), the benchmarks (not built here: their smoke
# tests start 40 jobs, 4 minutes under ASan, for library paths the suites cover) and the launcher
# environments whose code paths the other runs already take (Slurm; security's four jobs, but one)
# are left to the plain runs. tests/run.sh leaves the selection out of its plain Open MPI run when
# this runs too: every program and rank count still runs once on Open MPI, and all of them on MPICH.
set -euo pipefail
selection=(
  topology-np1 topology-singleton topology-np4-nodes-of-3
  guards-np1 guards-np4 guards-singleton config-np3
  objects-np1 objects-np4 objects-singleton lifecycle-np1 lifecycle-np3
  jobs faults trace-dumps trace-report train-regression readme-example
  collectives-np1 collectives-np4 collectives-chunked-np3 collectives-errors-np3
  groups-np1 groups-np4-nodes-of-3 groups-singleton
  shm-np1 shm-np3 shm-auto-np4 shm-np4-nodes-of-3 shm-auto-np4-nodes-of-2 shm-small-fusion-np2
  device_emulation-np4 device_emulation-same-uuid-np2 device_emulation-simulated-nodes-np3
  device_emulation-shared-device-np2 collectives-device-np4 collectives-device-staged-np3
  collectives-errors-device-np3 collectives-errors-device-staged-np2 groups-device-np3
  groups-device-staged-np3 collectives-device-jobs
  listening-sockets-tcp-np2 hosts-np4-3+1
)
# Runs whose cases skip under MPIDIST_VALIDATE=1 (objects' crafted frames bypass the agreement):
# the plain Open MPI run keeps them too.
also_plain=(objects-np4)
if [ "${1:-}" = --list ]; then
  printf '%s\n' "${selection[@]}" | grep -vxF -f <(printf '%s\n' "${also_plain[@]}")
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
  # Only the tests this build has (the device ones need CUDA headers; hosts needs Open MPI).
  available=$(meson test -C "$build" --list 2>/dev/null | sed 's|.* / ||')
  set -- $(for name in "${selection[@]}"; do grep -qxF "$name" <<<"$available" && echo "$name"; done)
fi
status=0
meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier 3 "$@" || status=$?
exit "$status"
