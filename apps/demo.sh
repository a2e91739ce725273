#!/usr/bin/env bash
# The README's first command: set up, build, and run the main job under mpiexec -n 4.
source "$(dirname "${BASH_SOURCE[0]}")/../tests/setup.sh"
apps="$mpidist_build/apps"
echo; echo "== mpidist-info: where every rank runs =="
mpiexec -n 4 "$apps/mpidist-info"
echo; echo "== train-regression: data-parallel SGD on 4 ranks (the main job) =="
mpiexec -n 4 "$apps/train-regression" --epochs 20 --checkpoint /tmp/mpidist-regression.txt
echo; echo "== guards-example: main-process guards at work =="
mpiexec -n 4 "$apps/guards-example"
