#!/bin/bash
. /tmp/env.sh
cd /tmp/ci-check2/build-sanitize
export ASAN_OPTIONS=detect_leaks=1:detect_odr_violation=0:abort_on_error=0:strict_string_checks=1:fast_unwind_on_malloc=0 LSAN_OPTIONS=suppressions=/tmp/ci-check2/tests/sanitizers/lsan.supp:print_suppressions=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for l in "3|" "4|MPIDIST_RANKS_PER_NODE=2" "5|MPIDIST_RANKS_PER_NODE=2" "4|MPIDIST_RANKS_PER_NODE=3 MPIDIST_HOST_ALLREDUCE=shm" "4|MPIDIST_RANKS_PER_NODE=2 MPIDIST_HOST_ALLREDUCE=2d" "3|MPIDIST_HOST_ALLREDUCE=mpi MPIDIST_MPI_MAX_COUNT=1000" "4|MPIDIST_RANKS_PER_NODE=2 MPIDIST_TEST_THREAD_LEVEL=multiple" "3|LD_LIBRARY_PATH=/tmp/ci-check2/build-sanitize/tests/device_emulation MPIDIST_TEST_DEVICE=1 MPIDIST_BACKEND=nccl"; do
  n=${l%%|*}; vars=${l#*|}
  out=$(env $vars MPIDIST_VALIDATE=1 MPIDIST_TIMEOUT=60 MPIDIST_TEST_SEED=51 MPIDIST_TEST_ROUNDS=100 timeout 600 mpiexec -n $n tests/test_differential 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL rc=$rc n=$n $vars"; echo "$out" | grep -E "ERROR|runtime error|element|Failure|SUMMARY" | head -8; else echo "ok n=$n $vars $(echo "$out" | grep -o 'ran. ([0-9]* ms')"; fi
done
