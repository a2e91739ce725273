#!/usr/bin/env bash
# On the GPU node, from the checkout's root (tree 01f48a7): the small all_reduce and all_gather at 2+2,
# where auto's leader path measured at MPI's level: auto, the 2D path forced and MPI's own call,
# interleaved, four runs each, 100 iterations a size.
# Everything lands in $OUT/results.tar.gz (re-packed after each step) and $OUT/summary.txt.
set -uo pipefail
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-300}
OUT=${OUT:-$PWD/kit-out}
RES=/tmp/res10
mkdir -p "$OUT" "$RES"
SUM=$OUT/summary.txt
: >"$SUM"
elapsed() { echo $(($(date +%s) - START)); }
note() { echo "[$(elapsed)s] $*" | tee -a "$SUM"; }
pack() { tar -czf "$OUT/results.tar.gz" -C "$RES" . 2>/dev/null; }
left() { echo $((DEADLINE_S - $(elapsed))); }

# 1. The kit's device steps (real CUDA and NCCL).
KIT_STEPS=${KIT_STEPS:-"nvidia-smi"} KIT_DEADLINE_S=90 \
  OUT=$RES/kit bash .device-bundle/run-on-device.sh >"$RES/kit-console.txt" 2>&1
note "kit: exit $?"; grep -E 'PASS|FAIL|TIMEOUT|SKIP' "$RES/kit/summary.txt" >>"$SUM"
pack
. /tmp/mpidist-kit/env.sh
B=/tmp/mpidist-kit/mpidist/bin
cp .device-extra/bin/* "$B/"  # the suites the kit does not carry (built with it, in /tmp/kit/build)
export OMPI_MCA_mpi_yield_when_idle=1
nproc | sed 's/^/cpus: /' >>"$SUM"

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
for r in 1 2 3 4; do
  for path in auto 2d mpi; do
    bench r$r-$path 2+2 all_reduce "${P[@]}" MPIDIST_HOST_ALLREDUCE=$path -- --backend mpi -b 4 -e 4K -f 4 -n 100
  done
done
for r in 1 2 3; do
  for path in auto 2d mpi; do
    bench r$r-$path 2+2 all_gather "${P[@]}" MPIDIST_HOST_ALLREDUCE=$path -- --backend mpi -b 16 -e 4K -f 4 -n 100
  done
done
note "done in $(elapsed) s"
pack
