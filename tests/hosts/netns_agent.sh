#!/bin/sh
# Open MPI's remote launch agent (--mca plm_rsh_agent) for hosts that are network namespaces on this
# machine: where ssh would log in to HOST and run the command line, this enters HOST's network
# namespace with a UTS namespace of its own named HOST, and runs the command line there.
#   netns_agent.sh HOST COMMAND...   with MPIDIST_NETNS="HOST=NAMESPACE ..." naming each host's namespace
host=$1
shift
# value_of LIST: the VALUE of the HOST=VALUE word of LIST that names this host, or nothing.
value_of() {
  for pair in $1; do
    [ "${pair%%=*}" = "$host" ] && echo "${pair#*=}"
  done
}
namespace=$(value_of "$MPIDIST_NETNS")
if [ -z "$namespace" ]; then
  echo "netns_agent.sh: no namespace for host '$host' in MPIDIST_NETNS='$MPIDIST_NETNS'" >&2
  exit 255  # what ssh returns when it cannot reach the host
fi
cpus=$(value_of "${MPIDIST_NETNS_CPUS:-}")  # cluster.sh's MPIDIST_HOST_CPUS: the host's own CPUs
# ssh joins its arguments into one line for the remote shell; eval does the same here.
# shellcheck disable=SC2086  # ${cpus:+...}: no words without CPUs, "taskset -c CPUS" with them
exec ${cpus:+taskset -c "$cpus"} ip netns exec "$namespace" unshare --uts /bin/sh -c 'hostname "$1" && shift && eval "$*"' netns_agent "$host" "$@"
