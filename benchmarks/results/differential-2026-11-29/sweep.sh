#!/bin/bash
# sweep.sh EXE MPIEXEC SEEDS...: each layout x seed, 300 rounds; prints failures
. /tmp/env.sh
exe=$1; mpiexec=$2; shift 2
layouts=(
"1|"
"2|"
"3|"
"4|"
"5|"
"4|MPIDIST_RANKS_PER_NODE=2"
"5|MPIDIST_RANKS_PER_NODE=2"
"4|MPIDIST_RANKS_PER_NODE=3"
"5|MPIDIST_RANKS_PER_NODE=3"
"3|MPIDIST_RANKS_PER_NODE=1"
"4|MPIDIST_RANKS_PER_NODE=2 MPIDIST_HOST_ALLREDUCE=2d"
"5|MPIDIST_RANKS_PER_NODE=2 MPIDIST_HOST_ALLREDUCE=2d"
"4|MPIDIST_RANKS_PER_NODE=3 MPIDIST_HOST_ALLREDUCE=shm"
"5|MPIDIST_RANKS_PER_NODE=2 MPIDIST_HOST_ALLREDUCE=shm"
"4|MPIDIST_HOST_ALLREDUCE=mpi"
"3|MPIDIST_HOST_ALLREDUCE=mpi MPIDIST_MPI_MAX_COUNT=1000"
"4|MPIDIST_RANKS_PER_NODE=2 MPIDIST_TEST_THREAD_LEVEL=multiple"
"4|MPIDIST_VALIDATE=1 MPIDIST_RANKS_PER_NODE=2"
"6|MPIDIST_RANKS_PER_NODE=2 MPIDIST_HOST_ALLREDUCE=2d"
)
for seed in "$@"; do
for l in "${layouts[@]}"; do
  n=${l%%|*}; vars=${l#*|}
  out=$(env $vars MPIDIST_TIMEOUT=60 MPIDIST_TEST_SEED=$seed MPIDIST_TEST_ROUNDS=${ROUNDS:-300} timeout 400 $mpiexec -n $n $exe 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL rc=$rc n=$n $vars seed=$seed"; echo "$out" | grep -E "Failure|element|Error|error" | head -8; else echo "ok n=$n $vars seed=$seed $(echo "$out" | grep -o 'ran. ([0-9]* ms' )"; fi
done
done
