#!/usr/bin/env bash
# The tests' set-up, on top of apps/setup.sh (sourced, not run): installs what the suites use
# besides the library's own packages (both MPIs, GoogleTest, Boost.MPI for the benchmark baseline,
# CMake for the CMake-consumer test, matplotlib for the plot test, Slurm, network namespaces, clang
# for the fuzz targets), and builds mpidist with its tests and benchmarks against Open MPI in
# ./build (or $MPIDIST_BUILD_DIR). tests/run.sh builds the MPICH copy (./build-mpich) itself.
source "$(dirname "${BASH_SOURCE[0]}")/../apps/setup.sh"
mpidist_install "${mpidist_demo_packages[@]}" \
  libboost-mpi-dev libgtest-dev libbenchmark-dev mpich libmpich-dev python3-matplotlib \
  cmake make                  `# the CMake-consumer tests: cmake and its default generator` \
  slurm-wlm munge libpmix-dev `# the Slurm test: daemons, srun, and the libpmix.so srun --mpi=pmix loads` \
  iproute2                    `# the separate-hosts test: ip netns, veth pairs` \
  clang libclang-rt-14-dev    `# the libFuzzer targets (tests/fuzz)`
mpidist_configure "$mpidist_build" -Dmpi=openmpi -Dtests=enabled -Dbenchmarks=enabled
ninja -C "$mpidist_build"

# The runs that mostly wait (timeouts, late ranks, whole jobs that end on purpose): they go in a
# lane of their own beside the others, so a slot of `meson test` does not sit idle for minutes.
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
