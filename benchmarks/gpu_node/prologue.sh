# Sourced by a script run on a lent GPU node (`run` with `command: "bash benchmarks/gpu_node/X.sh"`),
# from the checkout's root, after benchmarks/gpu_node/prepare.sh has made the carried folders here:
#   .device-bundle/  the device kit's bundle (../shared/device/make-bundle.sh): Open MPI, Boost,
#                    NCCL and mpidist's kit binaries
#   .device-extra/   bin/: the suites and tools the kit does not carry; iproute/: `ip` and its
#                    libraries, for nodes without iproute2
# It gives the script:
#   $RES (results, packed into $OUT/results.tar.gz by `pack`), $SUM ($OUT/summary.txt, by `note`),
#   `left` (seconds before DEADLINE_S, default 480), $B (the binaries, mpidist-bench among them)
#   and an Open MPI on PATH; with HOSTS=1 (default) also the two-host harness checked (ip, network
#   namespaces) and MPIDIST_BENCH set for tests/hosts/bench_two_hosts.sh.
# KIT_STEPS (default "nvidia-smi") runs those of the kit's device steps first.
set -uo pipefail
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-480}
OUT=${OUT:-$PWD/kit-out}
RES=${RES:-/tmp/gpu-node-results}
mkdir -p "$OUT" "$RES"
SUM=$OUT/summary.txt
: >"$SUM"
elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((DEADLINE_S - $(elapsed))); }
note() { echo "[$(elapsed)s] $*" | tee -a "$SUM"; }
pack() { tar -czf "$OUT/results.tar.gz" -C "$RES" . 2>/dev/null; }
fail() { note "$*"; pack; exit 1; }

[ -f .device-bundle/run-on-device.sh ] || fail "no .device-bundle here: run benchmarks/gpu_node/prepare.sh and carry it"
kit_steps=${KIT_STEPS:-nvidia-smi}
KIT_STEPS=$kit_steps KIT_DEADLINE_S=${KIT_DEADLINE_S:-90} OUT=$RES/kit \
  bash .device-bundle/run-on-device.sh >"$RES/kit-console.txt" 2>&1
note "kit ($kit_steps): exit $?"
grep -E 'PASS|FAIL|TIMEOUT|SKIP' "$RES/kit/summary.txt" >>"$SUM" 2>/dev/null
pack
. /tmp/mpidist-kit/env.sh
B=/tmp/mpidist-kit/mpidist/bin
[ -d .device-extra/bin ] && cp .device-extra/bin/* "$B/"
export OMPI_MCA_mpi_yield_when_idle=1
note "cpus: $(nproc)"

if [ "${HOSTS:-1}" = 1 ]; then
  if ! command -v ip >/dev/null || ! ip -V >/dev/null 2>&1; then
    [ -x .device-extra/iproute/ip ] || chmod +x .device-extra/iproute/ip 2>/dev/null
    mkdir -p /tmp/ipbin
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
      "$PWD/.device-extra/iproute/lib" "$PWD/.device-extra/iproute/ip" >/tmp/ipbin/ip
    chmod +x /tmp/ipbin/ip
    export PATH=/tmp/ipbin:$PATH
    note "ip: carried ($(ip -V 2>&1))"
  fi
  for tool in unshare taskset hostname python3; do command -v $tool >/dev/null || note "missing: $tool"; done
  ip netns add mpidist-probe 2>"$RES/netns-probe.txt" || fail "network namespaces refused: $(cat "$RES/netns-probe.txt")"
  ip netns del mpidist-probe
  # mpiexec runs the agent, the scripts run each other: a copy may have lost their exec bits
  chmod +x tests/hosts/netns_agent.sh tests/hosts/bench_two_hosts.sh tests/hosts/two_hosts.sh benchmarks/targets_across_hosts
  export MPIDIST_BENCH=$B/mpidist-bench
fi
