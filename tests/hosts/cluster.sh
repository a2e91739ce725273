# shellcheck shell=bash disable=SC2034  # the variables set here are the caller's
# Sourced (bash) by two_hosts.sh and bench_two_hosts.sh: two hosts on one machine, network namespaces
# joined by a veth pair, each process in its host's namespace with a UTS namespace of its own (its
# host name). mpiexec runs on the first host and starts Open MPI's daemon on the second through
# netns_agent.sh instead of ssh; ranks on different hosts talk TCP over the veth. Needs root.
#
#   cluster_init A+B   the names below, a scratch directory $tmp, and the traps that delete the
#                      namespaces on exit (also on Ctrl-C, TERM, HUP, PIPE)
#   cluster_up         the namespaces, the veth, host names, $tmp/hostfile; then on_host_a (a command
#                      prefix: run on host A) and mpiexec_args (mpiexec across both hosts over TCP)
#   veth_bytes         bytes that crossed the veth so far, both directions
# MPIDIST_HOST_CPUS="A B" gives each host CPUs of its own (taskset lists), see cluster_up.
# The caller defines skip REASON (the kernel refuses the namespaces) and bail REASON (anything else is
# missing or broken), each of which exits, before cluster_up.

cluster_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cluster_init() {  # cluster_init A+B: slots_a slots_b ranks ns_a ns_b host_a host_b subnet tmp
  layout=$1
  slots_a=${layout%+*} slots_b=${layout#*+}
  ranks=$((slots_a + slots_b))
  # Fixed names and addresses inside the namespaces clash with nothing: only the namespaces' own names
  # (and their /etc/netns entries) are visible outside, and those carry this process's id.
  ns_a=mpidist-$$-a ns_b=mpidist-$$-b
  host_a=mpidist-host-a host_b=mpidist-host-b
  subnet=10.213.0
  tmp=$(mktemp -d /tmp/mpidist-hosts.XXXXXX)
  trap cluster_cleanup EXIT
  trap 'exit 1' INT TERM HUP PIPE
}

cluster_cleanup() {
  # Whatever still runs in the namespaces (a daemon a killed mpiexec left behind) goes with them.
  for ns in "$ns_a" "$ns_b"; do
    if ip netns list 2>/dev/null | grep -w "$ns" >/dev/null; then
      pids=$(ip netns pids "$ns" 2>/dev/null)
      [ -n "$pids" ] && kill -9 $pids 2>/dev/null
      ip netns del "$ns" 2>/dev/null
    fi
    rm -rf "/etc/netns/$ns"
  done
  rm -rf "$tmp"
}

cluster_require_tools() {
  command -v ip >/dev/null || bail "ip not found: install iproute2 (tests/setup.sh does)"
  command -v unshare >/dev/null || bail "unshare not found: install util-linux"
}

# linked_with_open_mpi PROGRAM: the launch is Open MPI's (its rsh agent, hostfile and MCA options).
# grep reads all of ldd's output: with -q it could stop early, ldd then dies of SIGPIPE, and
# pipefail makes that a (false) "not linked".
linked_with_open_mpi() { ldd "$1" | grep 'libmpi\.so\.40' >/dev/null; }

cluster_up() {
  # The cluster: two namespaces, a veth pair between them, an address each, host names in /etc/netns.
  local err ns
  err=$(ip netns add "$ns_a" 2>&1) || skip "ip netns add: $err"
  err=$(ip netns add "$ns_b" 2>&1) || skip "ip netns add: $err"
  err=$(ip netns exec "$ns_a" unshare --uts hostname "$host_a" 2>&1) || skip "unshare --uts in a network namespace: $err"
  ip -n "$ns_a" link add veth-a type veth peer name veth-b netns "$ns_b" || bail "cannot create the veth pair"
  ip -n "$ns_a" addr add "$subnet.1/24" dev veth-a && ip -n "$ns_b" addr add "$subnet.2/24" dev veth-b || bail "addresses"
  for ns in "$ns_a" "$ns_b"; do
    ip -n "$ns" link set lo up && ip -n "$ns" link set "veth-${ns##*-}" up || bail "links up in $ns"
    mkdir -p "/etc/netns/$ns"  # ip netns exec binds these over /etc/hosts in the namespace only
    printf '127.0.0.1 localhost\n%s.1 %s\n%s.2 %s\n' "$subnet" "$host_a" "$subnet" "$host_b" >"/etc/netns/$ns/hosts"
  done
  printf '%s slots=%s\n%s slots=%s\n' "$host_a" "$slots_a" "$host_b" "$slots_b" >"$tmp/hostfile"
  export MPIDIST_NETNS="$host_a=$ns_a $host_b=$ns_b"
  unset MPIDIST_RANKS_PER_NODE
  # Reachable by name: a refused connection to a closed port means the packets got there (no ping here).
  ip netns exec "$ns_a" python3 -c '
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), timeout=5)
except ConnectionRefusedError:
    pass' "$host_b" || bail "$host_a cannot reach $host_b by name over the veth"
  echo "# $host_a ($ns_a, $subnet.1) and $host_b ($ns_b, $subnet.2), $layout ranks"

  # mpiexec on host A; Open MPI's daemons and ranks talk only over the veth subnet, ranks on the same
  # host through shared memory, across hosts through TCP (pml ob1 so no other transport steps in).
  on_host_a=(ip netns exec "$ns_a" unshare --uts /bin/sh -c 'hostname "$1" && shift && exec "$@"' on_host "$host_a")
  # plm rsh: the launcher that uses the agent, even where the environment names another
  # (OMPI_MCA_plm=isolated, as on some single-machine images, keeps every rank on host A).
  mpiexec_args=(mpiexec -n "$ranks" --hostfile "$tmp/hostfile" --mca plm rsh --mca plm_rsh_agent "$cluster_here/netns_agent.sh"
                --mca pml ob1 --mca btl tcp,self,vader
                --mca btl_tcp_if_include "$subnet.0/24" --mca oob_tcp_if_include "$subnet.0/24")
  # meson test's MALLOC_PERTURB_ goes to the ranks only: with it, Open MPI 4.1's mpiexec itself
  # segfaults now and then while it logs a rank's MPI_Abort (pmix_server_log_fn ->
  # orte_rml_oob_send_buffer_nb; one job in five to ten of those a watchdog ends, here), and the
  # ranks' last stderr, the report under test, is lost with it.
  if [ -n "${MALLOC_PERTURB_:-}" ]; then
    mpiexec_args+=(-x "MALLOC_PERTURB_=$MALLOC_PERTURB_")
    on_host_a=(env -u MALLOC_PERTURB_ "${on_host_a[@]}")
  fi
  # MPIDIST_HOST_CPUS="A B" (taskset lists, e.g. "0 1"): each host's processes on CPUs of its own, as
  # separate machines have. Without it both hosts share every core (mpidist counts the ranks of both
  # hosts on the machine's cores: same kernel, same boot id, lib/core/cpu_share.hpp).
  if [ -n "${MPIDIST_HOST_CPUS:-}" ]; then
    read -r cpus_a cpus_b <<<"$MPIDIST_HOST_CPUS"
    [ -n "${cpus_b:-}" ] || bail "MPIDIST_HOST_CPUS='$MPIDIST_HOST_CPUS': give host A's and host B's CPUs, e.g. '0 1'"
    export MPIDIST_NETNS_CPUS="$host_a=$cpus_a $host_b=$cpus_b"
    on_host_a=(taskset -c "$cpus_a" "${on_host_a[@]}")
    mpiexec_args+=(--bind-to none)  # Open MPI would otherwise bind each host's ranks across all cores
    echo "# host CPUs: $host_a on $cpus_a, $host_b on $cpus_b"
  fi
}

veth_bytes() {
  ip netns exec "$ns_a" sh -c 'cd /sys/class/net/veth-a/statistics && echo $(($(cat tx_bytes) + $(cat rx_bytes)))'
}
