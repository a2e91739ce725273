#!/usr/bin/env bash
cd /work/wt-hosts
export MPIDIST_BENCH=$PWD/build-hosts/benchmarks/mpidist-bench
out=$1; rounds=${2:-3}
for r in $(seq 1 $rounds); do
  for layout in 2+2 1+1; do
    for v in lib aa-groupcomm spin400 spin1000; do
      case $v in lib) e=();; aa-groupcomm) e=(MPIDIST_EXP_AA=1);; spin400) e=(MPIDIST_EXP_AA=1 MPIDIST_EXP_SPIN_NS=400);; spin1000) e=(MPIDIST_EXP_AA=1 MPIDIST_EXP_SPIN_NS=1000);; esac
      env MPIDIST_HOST_ALLREDUCE=mpi "${e[@]}" tests/hosts/bench_two_hosts.sh $layout $out/$v/run$r all_reduce -b 4 -e 1K -f 16 -n 500 -w 50 >/dev/null 2>&1 || echo FAIL $v $layout $r
    done
  done
done
echo ALLDONE
