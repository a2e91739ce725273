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

