#!/bin/bash
# sweep.sh OUTDIR: the issue-20 ops at 2 ranks and at 4 (oversubscribed on the 2 cores), 8 B-64 MiB
# in steps of 4 (and 64 MiB), raw MPI interleaved in the same run (mpidist-bench), one JSON and one
# table per op and rank count. Run from the repository root with Open MPI's settings of tests/setup.sh.
set -u
out=${1:?usage: sweep.sh OUTDIR}
bench=${MPIDIST_BENCH:-build/benchmarks/mpidist-bench}
mkdir -p "$out"
for np in 2 4; do
  for op in sendrecv all_to_all all_to_all_v all_gather_v gather scatter; do
    for range in "-b 8 -e 32M -f 4 -n 200 -w 20" "-b 64M -e 64M -n 10 -w 2"; do
      tag=$([ "${range#-b 64M}" != "$range" ] && echo 64M || echo sweep)
      timeout 600 mpiexec -n $np "$bench" $op $range --json "$out/$op-np$np-$tag.json" > "$out/$op-np$np-$tag.txt" 2>&1 ||
        echo "FAILED: $op np$np $tag"
    done
  done
done
# The bandwidth target: ping-pong from 1 MiB to 256 MiB at 2 ranks.
timeout 900 mpiexec -n 2 "$bench" sendrecv -b 1M -e 256M -f 2 -n 20 -w 3 --json "$out/sendrecv-np2-bandwidth.json" \
  > "$out/sendrecv-np2-bandwidth.txt" 2>&1 || echo "FAILED: sendrecv bandwidth"
