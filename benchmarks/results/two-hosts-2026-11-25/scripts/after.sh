#!/usr/bin/env bash
cd /work/wt-hosts
export MPIDIST_BENCH=$PWD/build-hosts/benchmarks/mpidist-bench
out=$1; rounds=${2:-3}
for r in $(seq 1 $rounds); do
  for layout in 2+2 3+1 1+1; do
    tests/hosts/bench_two_hosts.sh $layout $out/auto/run$r all_reduce -b 4K -e 4M -f 4 -n 50 -w 5 >/dev/null 2>&1 || echo FAIL $layout $r
  done
done
echo ALLDONE
