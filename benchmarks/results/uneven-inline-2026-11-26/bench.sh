#!/bin/bash
# bench.sh NP ROUNDS: before (main's build) and after (this branch) alternating, every op, 8 B-4 KiB
. /tmp/smallx-work/mpienv.sh
W=/tmp/smallx-work; np=$1; rounds=${2:-3}
mkdir -p $W/json
for round in $(seq 1 $rounds); do
  for op in all_to_all all_to_all_v all_gather_v gather scatter; do
    for side in before after; do
      [ $((round % 2)) = 0 ] && side=$([ $side = before ] && echo after || echo before)
      B=$([ $side = before ] && echo $W/base/benchmarks/mpidist-bench || echo /work/wt-smallx/build/benchmarks/mpidist-bench)
      timeout 300 mpiexec -n $np $B $op -b 8 -e 4K -f 2 -n 300 -w 30 --json $W/json/$side-$op-np$np-r$round.json > $W/json/$side-$op-np$np-r$round.txt 2>&1 || echo "FAIL $side $op $round"
    done
  done
done
