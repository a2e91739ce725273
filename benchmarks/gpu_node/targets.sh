#!/usr/bin/env bash
# On a lent GPU node, from the checkout's root: the across-hosts targets (benchmarks/targets_across_hosts)
# on the node's own cores, each host on half of them, with MPI's own call as the control. Results in
# $OUT/results.tar.gz (targets.md, targets.json, every sweep) and $OUT/summary.txt.
#   TARGETS_ARGS  more flags for targets_across_hosts (e.g. "--layouts 2+2 --ops all_reduce")
source "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"
half=$(($(nproc) / 2))
cpus=${MPIDIST_HOST_CPUS:-"0-$((half - 1)) $half-$((2 * half - 1))"}
note "targets: hosts on CPUs $cpus, $(left) s left"
# shellcheck disable=SC2086  # TARGETS_ARGS is a list of flags
benchmarks/targets_across_hosts "$RES/targets" --control --host-cpus "$cpus" --deadline "$(($(left) - 15))" \
  ${TARGETS_ARGS:-} >"$RES/targets-console.txt" 2>&1
note "targets: exit $?; $(head -1 "$RES/targets/targets.md" 2>/dev/null)"
pack
