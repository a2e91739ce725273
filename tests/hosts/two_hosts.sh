#!/usr/bin/env bash
# Two hosts on one machine: network namespaces joined by a veth pair, each process in its host's
# namespace with a UTS namespace of its own (its host name). mpiexec runs on the first host and
# starts Open MPI's daemon on the second through netns_agent.sh instead of ssh; ranks on different
# hosts talk TCP over the veth, as across real machines. No simulated nodes (MPIDIST_RANKS_PER_NODE).
# The cluster itself is cluster.sh's (shared with bench_two_hosts.sh).
#   two_hosts.sh A+B MPIDIST_INFO [NAME=VALUE...] TEST_EXE...   A and B ranks on the two hosts; TAP on
#   stdout. NAME=VALUE before a test program sets that variable for its ranks only.
#   MPIDIST_HOSTS_BY_NODE=1: mpiexec --map-by node (equal hosts; see below). MPIDIST_HOST_CPUS: cluster.sh.
# Skipped (TAP "1..0 # SKIP", with the reason) only where the kernel refuses the namespaces.
set -uo pipefail
layout=$1 info=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../support/tap_jobs.sh"
source "$here/cluster.sh"  # the two hosts: names, cleanup on exit, cluster_up, veth_bytes

cluster_init "$layout"
tap_budget 540  # of meson's 600 s

skip() {
  echo "mpidist hosts test SKIPPED: the kernel refuses namespaces here: $1" >&2
  echo "1..0 # SKIP the kernel refuses namespaces here: $1"
  exit 0
}
bail() { echo "Bail out! $1"; exit 1; }
cluster_require_tools
if ! linked_with_open_mpi "$info"; then
  echo "1..0 # SKIP $(basename "$info") is not linked with Open MPI; this test drives Open MPI's mpiexec"
  exit 0
fi

cluster_up
# The topology suite and mpidist-info's check learn which node each rank must find itself on. By
# slot (mpiexec's default) host A holds the first ranks. MPIDIST_HOSTS_BY_NODE=1 deals them to the
# hosts in turn instead (--map-by node: 0 on A, 1 on B, 2 on A, ...), so that every node's ranks
# interleave in the world; hosts of equal ranks only, where that order is the only one.
if [ "${MPIDIST_HOSTS_BY_NODE:-0}" = 1 ]; then
  ((slots_a == slots_b)) || bail "MPIDIST_HOSTS_BY_NODE=1 needs as many ranks on each host (not $layout)"
  [ -z "${FAULT_PROBE:-}" ] || bail "MPIDIST_HOSTS_BY_NODE=1: the watchdog's cases (FAULT_PROBE) expect ranks by slot"
  rank_nodes=
  for ((r = 0; r < ranks; r++)); do rank_nodes+=${rank_nodes:+,}$((r % 2)); done
  export MPIDIST_TEST_RANK_NODES=$rank_nodes
  mpiexec_args+=(--map-by node -x MPIDIST_TEST_RANK_NODES)
  placement="nodes=$rank_nodes" placement_text="ranks dealt to the hosts in turn"
else
  export MPIDIST_TEST_NODE_SIZES=$slots_a,$slots_b
  mpiexec_args+=(-x MPIDIST_TEST_NODE_SIZES)
  placement="$slots_a,$slots_b" placement_text="local ranks per host"
fi
run_job() {  # run_job SECONDS [MPIEXEC OPTIONS] PROGRAM ARGS...: stdout in $tmp/out, stderr in $tmp/err, exit status returned
  bounded "$1" "${on_host_a[@]}" "${mpiexec_args[@]}" "${@:2}" >"$tmp/out" 2>"$tmp/err"
}

start=$SECONDS
run_job 120 "$info" --json
info_rc=$?
info_took=$((SECONDS - start))
echo "# mpidist-info: a job across the hosts, start to end, in $info_took s"
tap_placement $info_rc "$placement" "[$layout] mpidist-info: two hosts, two nodes, $placement_text"
# Who shares cores, as auto's choices across hosts see it: with MPIDIST_HOST_CPUS each host on CPUs
# of its own (its ranks may share them; the hosts do not), else both hosts on the same ones.
run_job 60 "$info"
cores=$(grep '^cores:' "$tmp/out")
if [[ $cores != *shared* ]]; then
  tap "ok - [$layout] mpidist-info: $cores # SKIP no core is shared here"
elif [ -n "${MPIDIST_HOST_CPUS:-}" ] && [[ $cores != *"hosts on one machine share its CPUs"* ]]; then
  tap "ok - [$layout] mpidist-info: each host on CPUs of its own ($MPIDIST_HOST_CPUS): $cores"
elif [ -z "${MPIDIST_HOST_CPUS:-}" ] && [[ $cores == *"hosts on one machine share its CPUs"* ]]; then
  tap "ok - [$layout] mpidist-info: both hosts on the same CPUs: $cores"
else
  tap "not ok - [$layout] mpidist-info: MPIDIST_HOST_CPUS='${MPIDIST_HOST_CPUS:-}' but $cores"
fi

variables=()
for exe in "$@"; do
  if [[ $exe == *=* ]]; then variables+=(-x "$exe"); continue; fi
  name=$(basename "$exe")
  before=$(veth_bytes)
  start=$SECONDS
  run_job 300 "${variables[@]}" "$exe" --gtest_output="xml:$tmp/$name.xml"
  rc=$?
  bytes=$(($(veth_bytes) - before))
  echo "# $name${variables[*]:+ (${variables[*]})}: exit $rc in $((SECONDS - start)) s, $bytes bytes over the veth between the hosts"
  variables=()
  tap_gtest $rc "$name" "[$layout]"
  # Ranks on both hosts exchanged tensors: far more than the launch's few kilobytes crossed the veth.
  # test_shm (forced to shm): the hierarchical all-reduce's leaders reduce across the hosts over it.
  if [[ $name == test_collectives* || $name == test_shm ]]; then
    if ((bytes > 1000000)); then
      tap "ok - [$layout] $name: tensor traffic between the hosts over TCP ($bytes bytes)"
    else
      tap "not ok - [$layout] $name: only $bytes bytes crossed the veth between the hosts"
    fi
  fi
done
# The watchdog across hosts (FAULT_PROBE set): the last rank, on host B, skips a barrier. A
# watchdog sees ranks of another host only by asking that host (at MPI_THREAD_MULTIPLE). So at
# Multiple every report places every rank, with none "not visible" or unanswered, and one names the
# absent rank and what it does; at Funneled a report says the other host is not visible. The first
# report ends the job (MPI_Abort) and may cut the others short: one report is enough. The report
# comes at the timeout plus the watchdog's grace ("has waited 4.0 s"); ending the job is then the
# launcher's work across the hosts, which took 9 s under ASan on a loaded CI machine. So the bound is
# timeout + 10 s plus a job's start and end (mpidist-info's): far below the absent rank's 60 s.
watchdog_reports() {  # every rank's watchdog report in $tmp/err: its first line and the indented ones after it
  awk '/\] watchdog:/ {on = 1; print; next} on && /^  / {print; next} {on = 0}' "$tmp/err"
}
# How the launcher saw the processes end, kept in the log of the watchdog cases: their exit status
# alone does not say (CI saw 143 and 139 here: a rank's SIGTERM, or a segmentation fault, first).
how_processes_ended() {
  grep -E "exited on signal|Process received signal|Signal: |AddressSanitizer|runtime error" "$tmp/err" | note || true
}
# The fault cases below each mostly wait (a timeout, a rank's lingering, the job's end across the
# hosts), so they run three at a time: each case is a function, run in a subshell with a scratch
# directory of its own ($tmp/case-N), its TAP lines kept and printed in the order the cases were
# added. Each case's time bound counts from its own start; three at a time left every case's time
# as it was alone (3-9 s) and took the runs from 98-109 s to 50-67 s. fault_case FUNCTION ARGS...
# adds one; run_fault_cases runs them.
fault_cases=()
fault_case() { fault_cases+=("$(printf '%q ' "$@")"); }
run_fault_cases() {
  local i running=0 dir line
  for i in "${!fault_cases[@]}"; do
    if ((running == 3)); then wait -n; running=$((running - 1)); fi
    dir=$tmp/case-$i
    mkdir -p "$dir"
    (tmp=$dir; eval "${fault_cases[$i]}") >"$dir/tap" 2>"$dir/log" &
    running=$((running + 1))
  done
  wait
  for i in "${!fault_cases[@]}"; do
    dir=$tmp/case-$i
    while IFS= read -r line; do
      if [[ $line == "ok "* || $line == "not ok "* ]]; then tap "$line"; else echo "$line"; fi
    done <"$dir/tap"
    cat "$dir/log" >&2
  done
}
if [ -n "${FAULT_PROBE:-}" ]; then
  last=$((ranks - 1))
  skipped_barrier() {  # skipped_barrier LEVEL: multiple or funneled
    local level=$1 multiple start rc took reports label why=""
    multiple=$([ $level = multiple ] && echo 1 || echo 0)
    start=$SECONDS
    # Validation off: with MPIDIST_VALIDATE=1 (the sanitizer run's) the barrier's agreement would
    # time out first and raise an Error instead of the watchdog's report under test.
    (export MPIDIST_TIMEOUT=3 MPIDIST_VALIDATE=0 FAULT_PROBE_MULTIPLE=$multiple
     run_job 60 -x MPIDIST_TIMEOUT -x MPIDIST_VALIDATE -x FAULT_PROBE_MULTIPLE "$FAULT_PROBE" skip-barrier "$last")
    rc=$? took=$((SECONDS - start))
    reports=$(watchdog_reports)
    note <<<"$reports"
    how_processes_ended
    label="[$layout] watchdog at $level: rank $last on $host_b skips a barrier"
    if ((rc == 0)) || ((took > 3 + 10 + info_took)); then
      why="the job ended with $rc after $took s (expected non-zero within timeout + 10 + $info_took s)"
    elif ! grep -q "watchdog: barrier #4 on world" <<<"$reports"; then
      why="no watchdog report"
    elif [ $level = multiple ] && grep -Eq "not visible from here|did not answer" <<<"$reports"; then
      why="a report does not place the ranks of the other host"
    elif [ $level = multiple ] &&
         ! grep -Eq "^  rank $last, pid [0-9]+ on $host_b: last finished all_reduce #3 on world .*now in no collective" <<<"$reports"; then
      why="no report names rank $last and what it does"
    elif [ $level = funneled ] && ! grep -q "^  ranks on other hosts, not visible from here" <<<"$reports"; then
      why="no report says that the other host is not visible"
    fi
    if [ -n "$why" ]; then
      tap "not ok - $label: $why"
      tail -n 40 "$tmp/err" >&2
    else
      tap "ok - $label: reported (exit $rc after $took s)"
    fi
  }
  fault_case skipped_barrier multiple
  fault_case skipped_barrier funneled
  # The background consistency check across hosts: the last rank reduces int32 where the others
  # reduce float32 (the bytes match, so MPI completes it), then every rank computes 20 s. At
  # Multiple the first ranks of the hosts compare hashes every second and end the job long before.
  different_dtype() {
    local start=$SECONDS rc took label expected
    (export MPIDIST_TIMEOUT=30 MPIDIST_VALIDATE=0 FAULT_PROBE_MULTIPLE=1 FAULT_PROBE_COMPUTE_AFTER=20
     run_job 60 -x MPIDIST_TIMEOUT -x MPIDIST_VALIDATE -x FAULT_PROBE_MULTIPLE -x FAULT_PROBE_COMPUTE_AFTER \
       "$FAULT_PROBE" dtype "$last" catch)
    rc=$? took=$((SECONDS - start))
    note <"$tmp/err"
    label="[$layout] consistency across hosts: rank $last on $host_b reduces int32, the others float32"
    expected="consistency: ranks called different collectives on the same communicator, so results are wrong: #4 on world: world rank [0-9]+ called all_reduce 1024 (float32|int32) sum; world rank [0-9]+ called all_reduce 1024 (int32|float32) sum"
    if ((rc == 0)) || ((took > 20)); then
      tap "not ok - $label: the job ended with $rc after $took s (expected non-zero well before the 20 s of computing end)"
    elif ! grep -Eq "$expected" "$tmp/err"; then
      tap "not ok - $label: no report names both calls"
    else
      tap "ok - $label: found in the background (exit $rc after $took s)"
    fi
  }
  fault_case different_dtype
  # The verdict on a mismatch that the watchdog must report within 10 s plus a job's start, before
  # any timeout or computing ends, from the caller's $rc, $took and the job's output:
  # reported_in_time LABEL PATTERN (an extended regex that a line of the report matches, naming both calls).
  reported_in_time() {
    local report
    report=$(grep -E "$2" "$tmp/err" | head -1)
    note <<<"$report"
    if ((rc == 0)) || ((took > 10 + info_took)) || grep -q "past its timeout" "$tmp/err"; then
      tap "not ok - $1: the job ended with $rc after $took s (expected non-zero within 10 + $info_took s, before the timeout)"
      tail -n 40 "$tmp/err" >&2
    elif [ -z "$report" ]; then
      tap "not ok - $1: no report names both calls"
      tail -n 40 "$tmp/err" >&2
    else
      tap "ok - $1: reported (exit $rc after $took s)"
    fi
  }
  # A call in flight that a rank of the other host made differently: the last rank broadcasts where
  # the others all-reduce, which holds the ranks inside MPI (or its segment) on both hosts. At
  # Multiple a rank's watchdog asks host B what its ranks called and ends the job within seconds,
  # naming both calls, not at the 30 s timeout (at Funneled the timeout's reports name them).
  call_in_flight() {
    local start=$SECONDS rc took mine theirs
    (export MPIDIST_TIMEOUT=30 MPIDIST_VALIDATE=0 FAULT_PROBE_MULTIPLE=1
     run_job 60 -x MPIDIST_TIMEOUT -x MPIDIST_VALIDATE -x FAULT_PROBE_MULTIPLE "$FAULT_PROBE" broadcast-vs-all-reduce "$last" catch)
    rc=$? took=$((SECONDS - start))
    mine="called (all_reduce 1024 float32 sum|broadcast 1024 float32 root 0) \(still in it\)"
    theirs="world rank [0-9]+ called (broadcast 1024 float32 root 0|all_reduce 1024 float32 sum)"
    reported_in_time "[$layout] a call in flight across hosts: rank $last on $host_b broadcasts where the others all-reduce" \
      "consistency: .*$mine; $theirs"
  }
  fault_case call_in_flight
  # A call that MPI failed on some ranks and returned from on others: MPI's own all_to_all with
  # blocks of 3 on the last rank (host B) and 2 elsewhere raises its error on overrun ranks, and
  # the last rank returns with short blocks and no Error (or ranks stay inside MPI). Every rank then
  # computes 20 s. At Multiple a failed rank's watchdog finds the return (at 3+1 by asking host B)
  # and ends the job within seconds; or the check of the call in flight does, where ranks stayed.
  wrong_return() {
    local start=$SECONDS rc took returned held
    (export MPIDIST_TIMEOUT=30 MPIDIST_VALIDATE=0 MPIDIST_HOST_ALLREDUCE=mpi FAULT_PROBE_MULTIPLE=1 FAULT_PROBE_COMPUTE_AFTER=20
     run_job 60 -x MPIDIST_TIMEOUT -x MPIDIST_VALIDATE -x MPIDIST_HOST_ALLREDUCE -x FAULT_PROBE_MULTIPLE \
       -x FAULT_PROBE_COMPUTE_AFTER "$FAULT_PROBE" all-to-all-count "$last")
    rc=$? took=$((SECONDS - start))
    returned="world rank $last called all_to_all 3 float32 and returned, so its result is wrong; world rank [0-9]+ called all_to_all 2 float32, which failed there"
    held="called all_to_all 2 float32 \(still in it\); world rank $last called all_to_all 3 float32"
    reported_in_time "[$layout] a wrong return across hosts: MPI's all_to_all fails on host A, rank $last on $host_b returns" \
      "consistency: .*($returned|$held)"
  }
  fault_case wrong_return
  # A rank that skips a call across the hosts: within the timeout + 10 s the job ends, and the
  # watchdog's report (or the same account in the Error of a wait in shared memory) names the call
  # and places the rank on host B. skipped_call LABEL RANK ACCOUNT SCENARIO: the fault probe's
  # SCENARIO with RANK as the odd one; ACCOUNT, a fixed string the report must hold.
  skipped_call() {
    local label="[$layout] watchdog: $1" rank=$2 account=$3 scenario=$4 rc took start=$SECONDS
    (export MPIDIST_TIMEOUT=3 MPIDIST_VALIDATE=0 FAULT_PROBE_MULTIPLE=1
     run_job 60 -x MPIDIST_TIMEOUT -x MPIDIST_VALIDATE -x FAULT_PROBE_MULTIPLE "$FAULT_PROBE" "$scenario" "$rank")
    rc=$? took=$((SECONDS - start))
    how_processes_ended
    if ((rc == 0)) || ((took > 3 + 10 + info_took)); then
      tap "not ok - $label: the job ended with $rc after $took s (expected non-zero within timeout + 10 + $info_took s)"
      tail -n 40 "$tmp/err" >&2
    elif ! grep -qF "$account" "$tmp/err"; then
      tap "not ok - $label: no account of the call"
      tail -n 40 "$tmp/err" >&2
    elif ! grep -Eq "^  rank $rank, pid [0-9]+ on $host_b" "$tmp/err"; then
      tap "not ok - $label: no account places rank $rank on $host_b"
      tail -n 40 "$tmp/err" >&2
    else
      note <<<"$(grep -A6 -F "$account" "$tmp/err" | head -14)"
      tap "ok - $label: reported (exit $rc after $took s)"
    fi
  }
  # An all-reduce: 4 KiB, the leader path, the leaders swapping over TCP while the node's other
  # ranks wait in its segment. 4 MiB: at 2+2 the 2D path, whose ranks wait in the cross-node step or
  # in the segment, testing the network from its waits; at 3+1 the leader path's MPI_Allreduce
  # between the leaders.
  for case in "skip-all-reduce 1024" "skip-large-all-reduce 1048576"; do
    read -r scenario floats <<<"$case"
    fault_case skipped_call "rank $last on $host_b skips an all-reduce of $floats floats across the hosts" "$last" \
      "all_reduce #4 on world ($floats float32 sum) has waited" "$scenario"
  done
  # A broadcast from rank 1 between the hosts' leaders: host B's leader (rank $slots_a) skips it, so
  # host B's other ranks wait for it in their segment (at 3+1 it is host B's only rank: the others
  # finish and wait at finalize, whose watchdog asks host B, at ThreadLevel::Multiple, where it is).
  fault_case skipped_call "rank $slots_a, host B's leader, skips a broadcast from rank 1 across the hosts" "$slots_a" \
    "broadcast #4 on world" skip-broadcast
  # A reduce-scatter: at 3+1 through the hosts' leaders, whose host B side (rank $slots_a) is
  # missing; at 2+2 the 2D path.
  fault_case skipped_call "rank $slots_a on $host_b skips a reduce-scatter across the hosts" "$slots_a" \
    "reduce_scatter #4 on world" skip-reduce-scatter
  # One rank's own bad argument across the hosts: the last rank (host B) refuses an all-reduce (its
  # out one element short, validation off) and votes. Host A cannot read host B's progress board:
  # the refusal reaches it as a message (watch/refusal_notices.hpp). Every rank of host A leaves at
  # once with the Error that names the refusal where it waits in the segment or the 2D path's
  # network step, or, held inside MPI's own collective, its watchdog ends the job within seconds,
  # naming it (a host peer that left on the message relays it on host A's board). Every rank then
  # lingers 5 s: the job must end long before the 30 s timeout. At Funneled: no rank asks another
  # host anything, so a host A of one rank (1+4), which waits inside MPI with host B's leader, reads
  # no message and has no host peer to relay one: it is ended by host B's finalize(), as before.
  # The non-blocking form at Multiple (-async): the step runs on the lane's thread, which reads the
  # message itself, so the ranks of host A raise the Error, none ended by its watchdog: all of them
  # on equal hosts (the 2D path, whose every wait polls); on unequal ones all but host A's leader,
  # which may wait inside the leaders' blocking MPI step with host B's (the refusing rank, at 3+1)
  # and then is ended by its watchdog, as in the blocking form (CI saw it at 3+1; at 1+4 host A
  # has only its leader).
  refused_on_its_own_arguments() {  # refused_on_its_own_arguments SCENARIO MULTIPLE (0 or 1)
    local scenario=$1 multiple=$2 label start=$SECONDS rc took told=0 errors=0 r
    local must_raise=$((slots_a == slots_b ? slots_a : slots_a - 1))
    label="[$layout] rank $last on $host_b refuses an all-reduce on its own arguments ($scenario"
    label+="$([ "$multiple" = 1 ] && echo ", multiple"))"
    (export MPIDIST_TIMEOUT=30 MPIDIST_VALIDATE=0 FAULT_PROBE_MULTIPLE=$multiple
     run_job 90 -x MPIDIST_TIMEOUT -x MPIDIST_VALIDATE -x FAULT_PROBE_MULTIPLE "$FAULT_PROBE" "$scenario" "$last")
    rc=$? took=$((SECONDS - start))
    how_processes_ended
    for ((r = 0; r < slots_a; r++)); do
      if grep -Eq "^probe: rank $r error after [0-9.]+ s: .*rank $last refused this call \(#4\) on its own arguments and will not join it \(out has (1048575|1023) elements" "$tmp/out"; then
        told=$((told + 1)) errors=$((errors + 1))
      elif grep -Eq "\[rank $r/$ranks\] watchdog: all_reduce(_async)? #4 on world .* cannot complete: rank $last of world refused it on its own arguments" "$tmp/err"; then
        told=$((told + 1))
      fi
    done
    note <<<"$(grep -E "^probe: rank|cannot complete" "$tmp/out" "$tmp/err" | cut -c1-300)"
    if ((took > 5 + 10 + info_took)); then
      tap "not ok - $label: the job took $took s (expected within the ranks' 5 s + 10 + $info_took s, before the 30 s timeout)"
      tail -n 40 "$tmp/err" >&2
    elif ((slots_a > 1 && told < slots_a)); then
      tap "not ok - $label: $told of host A's $slots_a ranks were told of the refusal"
      tail -n 40 "$tmp/err" >&2
    elif [[ $scenario == *-async ]] && ((errors < must_raise)); then
      tap "not ok - $label: $errors of host A's $slots_a ranks raised the Error, not $must_raise (the others' watchdogs ended the job)"
      tail -n 40 "$tmp/err" >&2
    else
      tap "ok - $label: host A's $slots_a ranks told, $errors by the Error (exit $rc after $took s)"
    fi
  }
  fault_case refused_on_its_own_arguments refuse-all-reduce 0
  fault_case refused_on_its_own_arguments refuse-large-all-reduce 0
  fault_case refused_on_its_own_arguments refuse-large-all-reduce-async 1
  run_fault_cases
fi
tap_end
