#!/usr/bin/env bash
# What the README's two commands share (sourced, not run): the Debian packages a command needs,
# installed when missing (mpidist_install), the Open MPI settings that let it run as root and on
# fewer cores than ranks, and the build directory with the options a command asks for
# (mpidist_configure). apps/demo.sh asks for the library and apps/ only; tests/setup.sh for the rest.
set -euo pipefail
mpidist_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mpidist_build=${MPIDIST_BUILD_DIR:-$mpidist_root/build}

# What the library and apps/ need: a compiler, Open MPI, Boost.Serialization, Meson and Ninja; and
# dpkg-dev, whose dpkg-architecture gives Meson Debian's library directory (without it Meson
# installs into lib64, where Debian's CMake never looks for the installed CMake package).
mpidist_demo_packages=(g++ python3 openmpi-bin libopenmpi-dev libboost-serialization-dev meson ninja-build pkg-config
                       dpkg-dev)

# mpidist_install PACKAGE...: installs the ones that are missing (sudo where not root).
mpidist_install() {
  local missing=() package sudo=""
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  ((${#missing[@]})) || return 0
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "mpidist: installing ${missing[*]}"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   # containers and CI run as root
export OMPI_MCA_rmaps_base_oversubscribe=1                          # 4 ranks on 2 cores
export OMPI_MCA_mpi_yield_when_idle=1                               # ...without busy-waiting each other out
export OMPI_MCA_btl_vader_single_copy_mechanism=none               # CMA is often blocked in containers

# mpidist_configure BUILD_DIR [-DNAME=VALUE...]: configures a build directory, or gives an existing
# one the options asked for (so the demo's lean ./build grows the tests when tests/run.sh asks).
mpidist_configure() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$mpidist_root" "$@" >/dev/null || meson setup "$dir" "$mpidist_root" "$@"
  elif ! mpidist_has_options "$dir" "$@"; then
    meson configure "$dir" "$@" >/dev/null
  fi
}
# mpidist_has_options BUILD_DIR [-DNAME=VALUE...]: true when the build already has those values.
mpidist_has_options() {
  local dir=$1
  shift
  (($#)) || return 0
  meson introspect "$dir" --buildoptions | python3 -c '
import json, sys
have = {o["name"]: o["value"] for o in json.load(sys.stdin)}
for arg in sys.argv[1:]:
    name, value = arg[2:].split("=", 1)
    if str(have.get(name)).lower() != value.lower():
        sys.exit(1)' "$@"
}
# mpidist_test_names BUILD_DIR: the names of the build's test runs, one per line.
mpidist_test_names() {
  meson test -C "$1" --no-rebuild --list 2>/dev/null | grep ' / ' | sed 's|.* / ||'
}
