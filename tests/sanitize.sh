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
# agreement): the plain Open MPI run keeps them too. So do the layouts that repeat code a sanitized
# run already covers, each 85-125 s under ASan (CI, 2026-11-25): shm-auto at 4 ranks (auto's
# segment path runs sanitized at 2 ranks, its hierarchical path in shm-np4-nodes-of-2), 2d on
# nodes of 3 (unequal nodes take the leader path, as shm-np4-nodes-of-3 does), 2d on two nodes of 2
# (72 s under ASan, CI 2026-11-27: shm-2d-np6-nodes-of-2 runs the same code on three) and async on
# nodes of 2 (async on the uneven nodes of 3 stays). And the two hosts (191 s under ASan, each run
# alone): across the veth the library takes the paths the simulated nodes take here, sanitized, and
# what only real hosts add is Open MPI's TCP transport and the watchdog's questions to the other
# host (those ran sanitized once, hosts-np5-1+4 in the CI of 347833e: 103 s, every case passed).
also_plain='^(objects-np4|shm-auto-np4|shm-auto-np4-nodes-of-2|shm-2d-np4-nodes-of-2|shm-2d-np4-nodes-of-3|async-nodes-of-2-np4|hosts-.*)$'
# Rank sweeps (NAME-np1 ... NAME-np4): under the sanitizers the group of one (np1) and the odd size
# (np3, where blocks, nodes and rings come out uneven) run; np2 and np4 of a sweep that has an np3
# run plain on Open MPI (and on MPICH). Named layouts (-nodes-of-k, hosts, Slurm) run here as they are.
if [ "${1:-}" = --plain ]; then
  mapfile -t names
  declare -A has_np3=()
  for name in "${names[@]}"; do [[ $name =~ ^(.*)-np3$ ]] && has_np3[${BASH_REMATCH[1]}]=1; done
  for name in "${names[@]}"; do
    if [[ $name =~ $plain_only|$also_plain ]]; then echo "$name"
    elif [[ $name =~ ^(.*)-np[24]$ ]] && [ -n "${has_np3[${BASH_REMATCH[1]}]:-}" ]; then echo "$name"
    fi
  done
  exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"   # packages, Open MPI settings, and the plain build
build=${MPIDIST_SANITIZE_BUILD_DIR:-$mpidist_root/build-sanitize}
# -O1 and line tables only (-g1): the build takes 0.6 of the time of -O2 -g under the sanitizers,
# and reports still name file and line.
start=$SECONDS
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$mpidist_root" -Db_sanitize=address,undefined -Db_lundef=false \
    -Doptimization=1 -Ddebug=false -Dcpp_args=-g1 -Dbenchmarks=disabled >/dev/null
fi
# Only what the runs need, as `meson test` itself builds for the runs it is given: here the
# programs of the runs left to the plain builds (test_objects_huge) and those no run starts
# (guards-example) are not compiled. (build.ninja first: a changed meson.build changes the list.)
if [ $# -eq 0 ]; then
  ninja -C "$build" build.ninja >/dev/null
  mapfile -t all < <(mpidist_test_names "$build")
  mapfile -t plain < <(printf '%s\n' "${all[@]}" | bash "${BASH_SOURCE[0]}" --plain)
  mapfile -t runs < <(printf '%s\n' "${all[@]}" | grep -vxF -f <(printf '%s\n' "${plain[@]}"))
  mapfile -t targets < <(meson introspect "$build" --tests --targets | python3 -c '
import json, os, sys
info, build, runs = json.load(sys.stdin), sys.argv[1], set(sys.argv[2:])
needed = {target for test in info["tests"] if test["name"] in runs for target in test["depends"]}
for target in info["targets"]:
    if target["id"] in needed:
        print(os.path.relpath(target["filename"][0], build))' "$(cd "$build" && pwd)" "${runs[@]}")
  ninja -C "$build" "${targets[@]}"
  echo "== the sanitizer build: $((SECONDS - start)) s =="
fi

# Full stacks for every allocation (fast_unwind_on_malloc=0): Open MPI is built without frame
# pointers and unloads its components at MPI_Finalize, so the fast unwinder stops at an anonymous
# frame and the suppressions below, which match library names, would find nothing to match.
export ASAN_OPTIONS=detect_leaks=1:detect_odr_violation=0:abort_on_error=0:strict_string_checks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$mpidist_root/tests/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=60
# The runs that mostly wait (timeouts, late ranks, whole jobs that end on purpose): they go in a
# lane of their own beside the others, so a slot of `meson test` does not sit idle for minutes.
# Only here: beside the full plain suite some of their time bounds failed (docs/testing.md).
waiting_runs='^(after-error-.*|faults|trace-dumps|jobs|collectives-device-jobs)$'
# mpidist_run_tests BUILD [MESON TEST OPTIONS...] -- NAME...: runs the named runs of BUILD, the
# waiting ones one at a time in a lane of their own (logs meson-logs/testlog-waiting.*) while the
# others run as usual (meson-logs/testlog.*). Returns non-zero if any failed.
mpidist_run_tests() {
  local build=$1 options=() busy=() waiting=() name status=0 lane=0
  shift
  while (($#)) && [ "$1" != -- ]; do options+=("$1"); shift; done
  shift
  for name in "$@"; do
    if [[ $name =~ $waiting_runs ]]; then waiting+=("$name"); else busy+=("$name"); fi
  done
  rm -f "$build"/meson-logs/testlog-waiting.*
  if ((${#waiting[@]})); then
    meson test -C "$build" --no-rebuild --print-errorlogs "${options[@]}" --num-processes 1 \
      --logbase testlog-waiting "${waiting[@]}" &
    lane=$!
  fi
  if ((${#busy[@]})); then
    meson test -C "$build" --no-rebuild --print-errorlogs "${options[@]}" "${busy[@]}" || status=$?
  fi
  if ((lane)); then wait "$lane" || status=1; fi
  [ "$status" = 0 ] || return 1
}

if [ $# -gt 0 ]; then  # what the caller named, as meson test takes it (it builds what those need)
  rm -f "$build"/meson-logs/testlog-waiting.*
  exec meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier 3 "$@"
fi
echo "== sanitize: ${#runs[@]} runs (${#plain[@]} left to the plain runs) =="
mpidist_run_tests "$build" --num-processes 2 --timeout-multiplier 3 -- "${runs[@]}"
