#!/bin/bash
source /tmp/ompi.env
cd /work/main
O=/tmp/ref
rm -rf $O; mkdir -p $O
for r in 1 2 3; do
  for s in own shared; do
    if [ $s = own ]; then export MPIDIST_HOST_CPUS="0 1"; else unset MPIDIST_HOST_CPUS; fi
    for op in all_gather reduce_scatter; do
      tests/hosts/bench_two_hosts.sh 2+2 $O/$s-auto-$r $op --backend mpi -b 4 -e 1M -f 4 -n 50 > $O/$s-$op-$r.console 2>&1
      echo "$s $op $r: $?"
    done
  done
done
