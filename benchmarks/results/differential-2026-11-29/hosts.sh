#!/bin/bash
cd /work/main
for seed in 101 102; do
for cpus in "" "0 1"; do
for layout in 2+2 3+1 1+3 2+3 3+2 1+4 1+1 2+1; do
  out=$( (export MPIDIST_TEST_SEED=$seed MPIDIST_TEST_ROUNDS=200 MPIDIST_TIMEOUT=60; [ -n "$cpus" ] && export MPIDIST_HOST_CPUS="$cpus"; MPIDIST_BENCH=build/tests/test_differential timeout 600 tests/hosts/bench_two_hosts.sh $layout /tmp/diff/hostsout differential) 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL rc=$rc $layout cpus='$cpus' seed=$seed"; echo "$out" | grep -E "element|Error|error|Failure" | head -6; else echo "ok $layout cpus='$cpus' seed=$seed $(echo "$out" | grep -o 'ran. ([0-9]* ms')"; fi
done; done; done
