#!/usr/bin/env bash
# On the GPU node, from the checkout's root: the device suites (kit), then issue 18 across two
# namespaced hosts on the node's quiet cores. Everything lands in $OUT/results.tar.gz (re-packed
# after each step) and $OUT/summary.txt.
set -uo pipefail
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-540}
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
KIT_STEPS=${KIT_STEPS:-"nvidia-smi"} KIT_DEADLINE_S=150 \
  OUT=$RES/kit bash .device-bundle/run-on-device.sh >"$RES/kit-console.txt" 2>&1
note "kit: exit $?"; grep -E 'PASS|FAIL|TIMEOUT|SKIP' "$RES/kit/summary.txt" >>"$SUM"
pack
. /tmp/mpidist-kit/env.sh
B=/tmp/mpidist-kit/mpidist/bin
cp .device-extra/bin/* "$B/"  # the suites the kit does not carry (built with it, in /tmp/kit/build)
export OMPI_MCA_mpi_yield_when_idle=1
nproc | sed 's/^/cpus: /' >>"$SUM"

# 2. The rest of the device suites: NCCL at 1 rank, staged through MPI at 2.
for suite in ${SUITES-}; do
  for mode in nccl:1 mpi:2; do
    [ "$suite" = test_groups ] && [ "$mode" = mpi:2 ] && continue
    timeout -k 5 60 env MPIDIST_TEST_DEVICE=1 MPIDIST_TIMEOUT=50 MPIDIST_BACKEND=${mode%:*} \
      mpiexec -n "${mode#*:}" "$B/$suite" >>"$RES/extra-tests.log" 2>&1
    note "device $suite ${mode}: exit $?"
  done
done
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
ls -l tests/hosts/ >>"$RES/diag.txt"
chmod +x tests/hosts/*.sh  # Open MPI execs the agent: it needs its exec bit wherever the copy lost it
{ env | grep -iE '^(ompi|opal|pmix|slurm|pbs|orte)' ; cat /etc/nsswitch.conf; ls -l /etc/hosts; } >>"$RES/diag.txt" 2>&1
timeout 60 tests/hosts/two_hosts.sh 2+2 "$B/mpidist-info" >"$RES/hosts-info-2+2.tap" 2>&1
note "hosts mpidist-info 2+2: exit $? ($(grep -c '^not ok' "$RES/hosts-info-2+2.tap") not ok)"
if grep -q '^not ok' "$RES/hosts-info-2+2.tap"; then
  OMPI_MCA_plm_base_verbose=5 OMPI_MCA_ras_base_verbose=5 OMPI_MCA_rmaps_base_verbose=5 \
    timeout 60 tests/hosts/two_hosts.sh 2+2 "$B/mpidist-info" >"$RES/hosts-info-verbose.tap" 2>&1
  note "placement wrong: verbose run in hosts-info-verbose.tap"; pack; exit 1
fi
CPUS=${CPUS:-"0-7 8-15"}

bench() {  # bench TAG LAYOUT OP [env...] -- flags
  local tag=$1 layout=$2 op=$3; shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  if [ "$(left)" -lt 40 ]; then note "skip $tag $layout $op: no time"; return; fi
  timeout -k 5 $(($(left) - 10)) env "${envs[@]}" tests/hosts/bench_two_hosts.sh "$layout" "$RES/$tag" "$op" "$@" \
    >"$RES/$tag-$op-$layout.console" 2>&1
  note "bench $tag $op $layout: exit $?"
  pack
}
P=(MPIDIST_HOST_CPUS="$CPUS")
AR=(--backend mpi -b 4 -e 64M -f 4 -n 30)
for r in 1 2 3; do
  bench r$r-auto 2+2 all_reduce "${P[@]}" -- "${AR[@]}"
  bench r$r-mpi 2+2 all_reduce "${P[@]}" MPIDIST_HOST_ALLREDUCE=mpi -- "${AR[@]}"
  bench r$r-2d 2+2 all_reduce "${P[@]}" MPIDIST_HOST_ALLREDUCE=2d -- "${AR[@]}"
done
for r in 1 2; do
  bench r$r-auto 4+4 all_reduce MPIDIST_HOST_CPUS="0-3 8-11" -- "${AR[@]}"
  bench r$r-mpi 4+4 all_reduce MPIDIST_HOST_CPUS="0-3 8-11" MPIDIST_HOST_ALLREDUCE=mpi -- "${AR[@]}"
done
note "done in $(elapsed) s"
pack
