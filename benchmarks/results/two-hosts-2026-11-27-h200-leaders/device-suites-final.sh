#!/usr/bin/env bash
# On the GPU node, from the checkout's root (library of 01f48a7 = 975e7f5's): the kit's device steps
# (NCCL preflight, test_collectives and its errors over NCCL at 1 rank and staged at 2, the duplicate
# GPU probe, the NCCL benchmark) and the suites the kit does not carry, on device memory, over NCCL at
# 1 rank and staged through MPI at 2. Results in $OUT/results.tar.gz and $OUT/summary.txt.
set -uo pipefail
START=$(date +%s)
OUT=${OUT:-$PWD/kit-out}
RES=/tmp/res-final
mkdir -p "$OUT" "$RES"
SUM=$OUT/summary.txt
: >"$SUM"
note() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$SUM"; }
KIT_STEPS="nvidia-smi environment nccl-preflight info nccl-np1 staged-np2 duplicate-gpu-np2 bench-nccl-np1" \
  KIT_BENCH_ARGS="-b 8 -e 256M -f 4" KIT_DEADLINE_S=90 OUT=$RES/kit bash .device-bundle/run-on-device.sh >"$RES/kit-console.txt" 2>&1
note "kit: exit $?"; grep -E 'PASS|FAIL|TIMEOUT|SKIP' "$RES/kit/summary.txt" >>"$SUM"
. /tmp/mpidist-kit/env.sh
B=/tmp/mpidist-kit/mpidist/bin
cp .device-extra/bin/* "$B/"
export OMPI_MCA_mpi_yield_when_idle=1
for suite in test_p2p test_async test_uneven test_device_contract test_groups; do
  for mode in nccl:1 mpi:2; do
    [ "$suite" = test_groups ] && [ "$mode" = mpi:2 ] && continue
    timeout -k 5 60 env MPIDIST_TEST_DEVICE=1 MPIDIST_TIMEOUT=50 MPIDIST_BACKEND=${mode%:*} \
      mpiexec -n "${mode#*:}" "$B/$suite" >>"$RES/extra-tests.log" 2>&1
    note "device $suite ${mode}: exit $?"
  done
done
note "done"
tar -czf "$OUT/results.tar.gz" -C "$RES" .
