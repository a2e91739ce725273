#!/usr/bin/env bash
# Shared set-up for the README's two commands: installs the Debian packages that are missing
# (everything the tests use: both MPIs, CMake for the CMake-consumer test, matplotlib for the plot
# test, clang for the fuzz targets), configures and builds mpidist against Open MPI in ./build (or
# $MPIDIST_BUILD_DIR), and exports the Open MPI settings that let it run as root and on fewer cores
# than ranks. Sourced, not run; tests/run.sh builds the MPICH copy (./build-mpich) itself.
set -euo pipefail
mpidist_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(g++ python3 openmpi-bin libopenmpi-dev libboost-mpi-dev libboost-serialization-dev meson ninja-build
          pkg-config libgtest-dev libbenchmark-dev mpich libmpich-dev cmake python3-matplotlib
          slurm-wlm munge libpmix-dev  # the Slurm test: daemons, srun, and the libpmix.so srun --mpi=pmix loads
          iproute2                     # the separate-hosts test: ip netns, veth pairs
          clang libclang-rt-14-dev)    # the libFuzzer targets (tests/fuzz)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "mpidist: installing ${missing[*]}"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   # containers and CI run as root
export OMPI_MCA_rmaps_base_oversubscribe=1                          # 4 ranks on 2 cores
export OMPI_MCA_mpi_yield_when_idle=1                               # ...without busy-waiting each other out
export OMPI_MCA_btl_vader_single_copy_mechanism=none               # CMA is often blocked in containers

mpidist_build=${MPIDIST_BUILD_DIR:-$mpidist_root/build}
# mpidist_configure BUILD_DIR [MESON_ARGS...]: configures a build directory once.
mpidist_configure() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$mpidist_root" "$@" >/dev/null || meson setup "$dir" "$mpidist_root" "$@"
  fi
}
# mpidist_test_names BUILD_DIR: the names of the build's test runs, one per line.
mpidist_test_names() {
  meson test -C "$1" --no-rebuild --list 2>/dev/null | grep ' / ' | sed 's|.* / ||'
}
mpidist_configure "$mpidist_build" -Dmpi=openmpi
ninja -C "$mpidist_build"
