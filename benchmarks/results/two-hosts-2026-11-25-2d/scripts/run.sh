#!/usr/bin/env bash
# usage: run.sh OUTROOT ROUNDS "VARIANT:LAYOUTS ..."   (from the worktree root)
# Rounds of mpidist-bench all_reduce across the two namespace hosts, 4 B-64 MiB, each variant a value
# of MPIDIST_HOST_ALLREDUCE, one after the other inside a round (raw MPI is interleaved in every run).
#   e.g. run.sh benchmarks/results/two-hosts-2026-11-25-2d 3 "2d:2+2 shm:2+2,3+1,1+1 mpi:2+2,3+1,1+1"
set -u
export MPIDIST_BENCH=${MPIDIST_BENCH:-$PWD/build-twod/benchmarks/mpidist-bench}
out=$1 rounds=$2 plan=$3
for r in $(seq 1 "$rounds"); do
  for item in $plan; do
    v=${item%%:*} layouts=${item#*:}
    for layout in ${layouts//,/ }; do
      MPIDIST_HOST_ALLREDUCE=$v nice -n 0 tests/hosts/bench_two_hosts.sh "$layout" "$out/$v/run$r" all_reduce \
        -b 4 -e 64M -f 4 >/dev/null 2>"$out/err-$v-$layout-$r.log" || echo "FAIL $v $layout $r"
    done
  done
done
echo ALLDONE
