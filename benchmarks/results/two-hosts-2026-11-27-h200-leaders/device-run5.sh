#!/usr/bin/env bash
# On the GPU node, from the checkout's root (tree 5bf6a44): the kit's device steps and the suites the
# split all_to_all's vote changed, on the real GPU; then issue 18's leaders' paths across two namespaced
# hosts on the node's quiet cores: all_gather at 2+2 (auto, leaders, 2D, MPI interleaved) and 3+1,
# broadcast from several roots, the split all_to_all's call cost, all_reduce at 2+2.
# Everything lands in $OUT/results.tar.gz (re-packed after each step) and $OUT/summary.txt.
set -uo pipefail
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-420}
OUT=${OUT:-$PWD/kit-out}
RES=/tmp/res
mkdir -p "$OUT" "$RES"
SUM=$OUT/summary.txt
: >"$SUM"
elapsed() { echo $(($(date +%s) - START)); }
note() { echo "[$(elapsed)s] $*" | tee -a "$SUM"; }
pack() { tar -czf "$OUT/results.tar.gz" -C "$RES" . 2>/dev/null; }
left() { echo $((DEADLINE_S - $(elapsed))); }

# 1. The kit's device steps (real CUDA and NCCL).
KIT_STEPS=${KIT_STEPS:-"nvidia-smi environment nccl-preflight nccl-np1 staged-np2 duplicate-gpu-np2"} KIT_DEADLINE_S=90 \
  OUT=$RES/kit bash .device-bundle/run-on-device.sh >"$RES/kit-console.txt" 2>&1
note "kit: exit $?"; grep -E 'PASS|FAIL|TIMEOUT|SKIP' "$RES/kit/summary.txt" >>"$SUM"
pack
. /tmp/mpidist-kit/env.sh
B=/tmp/mpidist-kit/mpidist/bin
cp .device-extra/bin/* "$B/"  # the suites the kit does not carry (built with it, in /tmp/kit/build)
export OMPI_MCA_mpi_yield_when_idle=1
nproc | sed 's/^/cpus: /' >>"$SUM"

# 2. test_uneven on device memory: NCCL at 1 rank; staged through MPI at 2 and 3 (MPI's path,
#    unvalidated: the standing rides beside the blocks); in pieces of 1000 elements at 4.
device_run() {  # device_run TAG RANKS BACKEND [VAR=VALUE...]
  local tag=$1 n=$2 backend=$3; shift 3
  timeout -k 5 60 env MPIDIST_TEST_DEVICE=1 MPIDIST_TIMEOUT=50 MPIDIST_BACKEND=$backend "$@" \
    mpiexec -n "$n" "$B/test_uneven" >>"$RES/uneven-device.log" 2>&1
  note "device test_uneven $tag: exit $? ($(grep -c '^\[  PASSED' "$RES/uneven-device.log") PASSED lines so far)"
}
device_run nccl-np1 1 nccl
device_run staged-np2 2 mpi
device_run mpi-path-unvalidated-np3 3 mpi MPIDIST_HOST_ALLREDUCE=mpi MPIDIST_VALIDATE=0
device_run mpi-path-chunked-np4 4 mpi MPIDIST_HOST_ALLREDUCE=mpi MPIDIST_MPI_MAX_COUNT=1000
pack

# 3. Two hosts: iproute2 from the checkout where the node has none.
if ! command -v ip >/dev/null || ! ip -V >/dev/null 2>&1; then
  mkdir -p /tmp/ipbin
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$PWD/.device-extra/iproute/lib" "$PWD/.device-extra/iproute/ip" >/tmp/ipbin/ip
  chmod +x /tmp/ipbin/ip .device-extra/iproute/ip
  export PATH=/tmp/ipbin:$PATH
  note "ip: carried ($(ip -V 2>&1))"
fi
for tool in unshare taskset hostname python3; do command -v $tool >/dev/null || note "missing: $tool"; done
if ! ip netns add mpidist-probe 2>"$RES/netns-probe.txt"; then
  note "netns refused: $(cat "$RES/netns-probe.txt")"; pack; exit 1
fi
ip netns del mpidist-probe
export MPIDIST_BENCH=$B/mpidist-bench
chmod +x tests/hosts/*.sh  # Open MPI execs the agent: it needs its exec bit wherever the copy lost it
for layout in 2+2 3+1; do
  timeout -k 5 90 tests/hosts/two_hosts.sh $layout "$B/mpidist-info" \
    GTEST_FILTER=Shm.AutoAcrossRealHosts:Shm.AutoGatherAndScatterAcrossRealHosts:Shm.BroadcastAcrossNodesFromEveryRoot \
    "$B/test_shm" MPIDIST_TEST_DEVICE=1 MPIDIST_VALIDATE=0 MPIDIST_BACKEND=mpi "$B/test_uneven" \
    >"$RES/hosts-tests-$layout.tap" 2>&1
  note "hosts tests $layout: exit $? ($(grep -c '^ok' "$RES/hosts-tests-$layout.tap") ok, $(grep -c '^not ok' "$RES/hosts-tests-$layout.tap") not ok)"
  pack
done
CPUS=${CPUS:-"0-7 8-15"}

bench() {  # bench TAG LAYOUT OP [env...] -- flags
  local tag=$1 layout=$2 op=$3; shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  if [ "$(left)" -lt 25 ]; then note "skip $tag $layout $op: no time"; return; fi
  timeout -k 5 $(($(left) - 10)) env "${envs[@]}" tests/hosts/bench_two_hosts.sh "$layout" "$RES/$tag" "$op" "$@" \
    >"$RES/$tag-$op-$layout.console" 2>&1
  note "bench $tag $op $layout: exit $?"
  pack
}
P=(MPIDIST_HOST_CPUS="$CPUS")
AG=(--backend mpi -b 4 -e 1M -f 4 -n 30)
BC=(--backend mpi -b 4 -e 4M -f 4 -n 30)
# all_gather at 2+2: auto, the leaders' path (shm), the 2D path and MPI's call, interleaved.
for r in 1 2 3; do
  for path in auto shm 2d mpi; do
    bench r$r-$path 2+2 all_gather "${P[@]}" MPIDIST_HOST_ALLREDUCE=$path -- "${AG[@]}"
  done
done
# broadcast: auto against MPI's call, roots on and off the leaders.
for r in 1 2; do
  for spec in 2+2:0 2+2:1 3+1:1 3+1:3; do
    for path in auto mpi; do
      bench r$r-$path-root${spec#*:} ${spec%:*} broadcast "${P[@]}" MPIDIST_HOST_ALLREDUCE=$path -- "${BC[@]}" -r ${spec#*:}
    done
  done
done
# all_gather at 3+1: the leaders' path under auto against MPI's call.
for r in 1 2; do
  for path in auto mpi; do
    bench r$r-$path 3+1 all_gather "${P[@]}" MPIDIST_HOST_ALLREDUCE=$path -- "${AG[@]}"
  done
done
# The split all_to_all's cost on a machine with a GPU (its vote beside the blocks).
for r in 1 2; do
  bench r$r-cost 1+1 call_cost "${P[@]}" MPIDIST_HOST_ALLREDUCE=mpi MPIDIST_BENCH=$B/call_cost -- --iters 3000 --reps 7
done
# all_reduce at 2+2, the two bands at or just above MPI: auto against MPI's call.
for r in 1 2 3; do
  for path in auto mpi; do
    bench r$r-$path 2+2 all_reduce "${P[@]}" MPIDIST_HOST_ALLREDUCE=$path -- --backend mpi -b 4 -e 16M -f 4 -n 30
  done
done
note "done in $(elapsed) s"
pack
