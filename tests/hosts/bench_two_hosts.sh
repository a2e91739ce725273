#!/usr/bin/env bash
# mpidist-bench across two hosts made on this machine (cluster.sh, as the hosts test uses: two network
# namespaces with host names of their own, joined by a veth pair; Open MPI's mpiexec on the first
# starts its daemon on the second through netns_agent.sh; TCP between the hosts, shared memory within).
#
#   tests/hosts/bench_two_hosts.sh A+B OUTDIR OP [mpidist-bench flags...]
#     A ranks on host A, B ranks on host B. Prints the table and writes OUTDIR/OP-A+B.json (--json)
#     and OUTDIR/OP-A+B.txt (the table, then the bytes that crossed the veth during the run).
#     e.g. tests/hosts/bench_two_hosts.sh 2+2 out all_reduce -b 4 -e 64M -f 4
#   env: MPIDIST_BENCH   the mpidist-bench to run (default build/benchmarks/mpidist-bench)
#        MPIDIST_HOST_CPUS="A B"  each host's processes on CPUs of its own (taskset lists, e.g. "0 1"),
#                        as separate machines have; unset, both hosts share every core (cluster.sh)
#        MPIDIST_*       every other MPIDIST_ variable set here reaches the ranks on both hosts
#                        (e.g. MPIDIST_HOST_ALLREDUCE=shm)
#        OMPI_*          as for any mpiexec; the defaults of apps/setup.sh are filled in where unset
#
# Needs root (network namespaces) and an Open MPI build. The namespaces, and whatever still runs in
# them, are deleted on exit, also on Ctrl-C. The two hosts share this machine's cores and the veth
# runs at memory speed: see docs/benchmarks.md, "Across two hosts", for what the numbers mean.
set -uo pipefail
me=$(basename "$0")
usage() { sed -n '6,15s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ $# -ge 3 ] || usage
[[ $1 =~ ^[1-9][0-9]*\+[1-9][0-9]*$ ]] || { echo "$me: layout '$1' is not A+B (ranks on each host, e.g. 2+2)" >&2; usage; }
layout=$1 outdir=$2 op=$3
shift 2  # "$@": OP and the flags, as mpidist-bench takes them
[[ $op != -* ]] || { echo "$me: the op comes first after OUTDIR (got '$op')" >&2; usage; }
for arg in "$@"; do
  [[ $arg != --json* ]] || { echo "$me: --json is this script's (OUTDIR/$op-$layout.json)" >&2; exit 2; }
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/cluster.sh"

skip() { echo "$me: the kernel refuses network namespaces here: $1" >&2; exit 1; }
bail() { echo "$me: $1" >&2; exit 1; }
bench=${MPIDIST_BENCH:-build/benchmarks/mpidist-bench}
[ -x "$bench" ] || bail "no mpidist-bench at '$bench' (set MPIDIST_BENCH; build: ninja -C BUILD benchmarks/mpidist-bench)"
[ "$(id -u)" = 0 ] || bail "needs root: it makes network namespaces"
cluster_require_tools
linked_with_open_mpi "$bench" || bail "$bench is not linked with Open MPI; this script drives Open MPI's mpiexec"
# Absolute paths: the ranks on host B start from the daemon's directory, rank 0 writes the JSON.
bench=$(realpath "$bench")
mkdir -p "$outdir" || bail "cannot create $outdir"
json=$(realpath "$outdir")/$op-$layout.json
table=$(realpath "$outdir")/$op-$layout.txt

# apps/setup.sh's Open MPI settings where the caller set none (Open MPI hands OMPI_* to every rank).
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}  # more ranks than cores
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}

cluster_init "$layout"
cluster_up
# Only -x variables reach the ranks on host B: pass on the caller's MPIDIST_ settings.
forward=()
for name in $(compgen -e | grep '^MPIDIST_'); do
  case $name in MPIDIST_NETNS | MPIDIST_NETNS_CPUS | MPIDIST_HOST_CPUS | MPIDIST_BENCH) ;; *) forward+=(-x "$name") ;; esac
done
((${#forward[@]} == 0)) || echo "# passed to every rank: ${forward[*]}"
echo "# $bench $*"

before=$(veth_bytes)
start=$SECONDS
# In the background, so that a Ctrl-C's trap (the namespaces' cleanup) runs at once.
("${on_host_a[@]}" "${mpiexec_args[@]}" "${forward[@]}" "$bench" "$@" --json "$json" | tee "$table") &
wait $!
rc=$?
bytes=$(($(veth_bytes) - before))
summary="# $layout on $host_a + $host_b: exit $rc in $((SECONDS - start)) s; $bytes bytes crossed the veth between the hosts (mpidist and raw MPI sides together, checks and warm-up included)"
echo "$summary" | tee -a "$table"
if ((rc == 0)) && [ -f "$json" ]; then
  nodes=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["nodes"])' "$json" 2>/dev/null)
  [ "$nodes" = 2 ] || echo "$me: warning: the run reports ${nodes:-?} nodes, not 2" >&2
  echo "# wrote $json and $table"
fi
exit $rc
