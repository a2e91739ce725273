#!/usr/bin/env bash
# The README's first command: installs what the library needs (Open MPI, Boost.Serialization,
# Meson, Ninja), builds the library and the three programs it runs (not the tests or the benchmarks: tests/run.sh
# adds those), and runs the main job under mpiexec -n 4.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
mpidist_install "${mpidist_demo_packages[@]}"
# A fresh ./build leaves the tests and benchmarks out; one tests/run.sh made keeps them.
[ -f "$mpidist_build/build.ninja" ] || mpidist_configure "$mpidist_build" -Dmpi=openmpi -Dtests=disabled -Dbenchmarks=disabled
apps="$mpidist_build/apps"
ninja -C "$mpidist_build" apps/mpidist-info apps/train-regression apps/guards-example
echo; echo "== mpidist-info: where every rank runs =="
mpiexec -n 4 "$apps/mpidist-info"
echo; echo "== train-regression: data-parallel SGD on 4 ranks (the main job) =="
mpiexec -n 4 "$apps/train-regression" --epochs 20 --checkpoint /tmp/mpidist-regression.txt
echo; echo "== guards-example: main-process guards at work =="
mpiexec -n 4 "$apps/guards-example"
