#!/usr/bin/env bash
# usage: xover.sh OUTROOT ROUNDS  -- interleaved shm vs mpi, 1+1 2+2 3+1, 4K-4M
cd /work/wt-hosts
export MPIDIST_BENCH=$PWD/build-hosts/benchmarks/mpidist-bench
out=$1; rounds=${2:-3}
for r in $(seq 1 $rounds); do
  for layout in 2+2 3+1 1+1; do
    for v in shm mpi; do
      MPIDIST_HOST_ALLREDUCE=$v nice -n 0 tests/hosts/bench_two_hosts.sh $layout $out/$v/run$r all_reduce -b 4K -e 4M -f 4 -n 50 -w 5 > /dev/null 2>$out/err-$v-$layout-$r.log || echo "FAIL $v $layout $r"
    done
  done
done
echo ALLDONE
