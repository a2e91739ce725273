#!/usr/bin/env bash
# A real single-host Slurm cluster, started and stopped by this test: munged with a fresh key,
# slurmctld and slurmd on this host, every socket, state, spool, log and pid file in a temporary
# directory and the daemons on free ports, so it clashes with nothing else on the machine. Jobs
# then run under `srun` with the PMI plugin that this Slurm and the MPI library both speak.
#   slurm_cluster.sh MPIDIST_INFO QUICKSTART TEST_EXE...   (TAP on stdout, daemon logs on failure)
set -uo pipefail
info=$1 quickstart=$2
shift 2
source "$(dirname "${BASH_SOURCE[0]}")/../support/tap_jobs.sh"
tap_budget 270  # of meson's 300 s

pids=()
tmp=$(mktemp -d /tmp/mpidist-slurm.XXXXXX)
cleanup() {
  # Jobs first, so that no slurmstepd outlives its slurmd; then the daemons, newest first.
  [ -f "$tmp/slurm.conf" ] && SLURM_CONF=$tmp/slurm.conf timeout 10 scancel --quiet --user=root >/dev/null 2>&1
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null
    for _ in $(seq 50); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.1; done
    kill -9 "${pids[i]}" 2>/dev/null
  done
  wait 2>/dev/null
  if ((failed)); then
    for log in "$tmp"/*.log; do [ -f "$log" ] && { echo "== $log"; tail -n 40 "$log"; } >&2; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

bail() { failed=1; echo "Bail out! $1"; exit 1; }
for tool in munged slurmctld slurmd srun sinfo scontrol; do
  command -v "$tool" >/dev/null || bail "$tool not found: install slurm-wlm and munge (tests/setup.sh does)"
done

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# munged insists on a private key and a socket directory that everyone may traverse.
chmod 755 "$tmp"
mkdir -m 700 "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/jobs"
head -c 1024 /dev/urandom >"$tmp/munge/munge.key"
chmod 600 "$tmp/munge/munge.key"
# Each daemon in a session of its own (setsid), apart from the test's process group and its signals.
setsid munged --foreground --key-file="$tmp/munge/munge.key" --socket="$tmp/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" >"$tmp/munged.log" 2>&1 &
pids+=($!)

host=$(hostname -s)
cpus=$(nproc)
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
cat >"$tmp/slurm.conf" <<CONF
ClusterName=mpidist
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge.socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
FirstJobId=$((1000 + $$ % 100000))
TmpFS=$tmp/jobs
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
export TMPDIR=$tmp/jobs  # the ranks' scratch (Open MPI's session directory), PMIx's is TmpFS: both ours alone

for _ in $(seq 50); do [ -S "$tmp/munge.socket" ] && break; sleep 0.1; done
[ -S "$tmp/munge.socket" ] || bail "munged did not start (see $tmp/munged.log)"
setsid slurmctld -D -i -f "$SLURM_CONF" >>"$tmp/slurmctld.log" 2>&1 &
pids+=($!)
setsid slurmd -D -f "$SLURM_CONF" -N "$host" >>"$tmp/slurmd.log" 2>&1 &
pids+=($!)

echo "# cluster in $tmp: slurmctld on port $ctld_port, slurmd on port $slurmd_port, node $host with $cpus CPUs"
state=
for _ in $(seq 300); do
  state=$(sinfo --noheader --nodes="$host" --format=%T 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || bail "node $host is '$state', not idle, after 60 s"
tap "ok - slurmctld and slurmd up, node $host idle"

# The PMI plugin both sides speak: srun lists Slurm's; the MPI library the programs are linked with
# decides which of those it can use.
plugins=$(srun --mpi=list 2>&1)
echo "$plugins" | note
mpi=${MPIDIST_SRUN_MPI:-} chosen="set by MPIDIST_SRUN_MPI"
if [ -z "$mpi" ]; then
  library=$(ldd "$info" | grep -o -E 'lib(mpi|mpich)\.so\.[0-9]+' | head -n 1)
  chosen="the PMI plugin Slurm and ${library:-the MPI library} share"
  if [ "$library" = libmpich.so.12 ]; then
    candidates=(pmi2)   # MPICH's PMI client speaks PMI-2 to srun (under pmix each rank is a singleton)
  elif command -v ompi_info >/dev/null && ompi_info --parsable | grep '^mca:pmix:ext' >/dev/null; then
    candidates=(pmix)   # Open MPI talks PMIx to srun; Debian builds it without Slurm's PMI-2 library
  else
    candidates=(pmix pmi2)
  fi
  for c in "${candidates[@]}"; do
    if grep -qw "$c" <<<"$plugins"; then mpi=$c; break; fi
  done
fi
[ -n "$mpi" ] || bail "no PMI plugin shared by Slurm and MPI (srun --mpi=list above)"
tap "ok - srun --mpi=$mpi: $chosen"

# Ranks 0-3 of 4 on one node, local ranks 0-3: what MPI says, whatever SLURM_* variables say.
# srun and sbatch each in a session of their own: Slurm records the submitter's session id and, on a
# single host, signals that process tree when a job ends; it must not be the test's or its runner's.
srun_job() {  # srun_job SECONDS PROGRAM ARGS...: stdout in $tmp/out, stderr in $tmp/err, exit status returned
  bounded "$1" setsid srun --mpi="$mpi" --overcommit -n 4 "${@:2}" >"$tmp/out" 2>"$tmp/err"
}
srun_job 120 "$info" --json
tap_placement $? 4 "srun -n 4 mpidist-info: ranks 0-3 of 4 on one node, local ranks 0-3"

srun_job 120 "$quickstart"
rc=$?
note <"$tmp/out"; note <"$tmp/err"
# The example logs to stderr, from rank 0 only.
if ((rc == 0)) && grep -q '4 ranks on 1 node' "$tmp/err" && grep -q 'linear: mean grad 1.5, worst loss 1.5' "$tmp/err"
then
  tap "ok - srun -n 4 quickstart (the README example)"
else
  tap "not ok - srun -n 4 quickstart (exit $rc)"
fi

# A batch job: sbatch runs the script on the node, srun inside it starts the ranks (as in the README).
bounded 30 setsid sbatch --parsable --overcommit -n 4 --output="$tmp/batch.out" \
  --wrap="srun --mpi=$mpi $quickstart" >"$tmp/out" 2>"$tmp/err"
rc=$? job=$(cat "$tmp/out") state=
note <"$tmp/err"
for _ in $(seq 600); do
  ((rc == 0)) || break
  state=$(scontrol show job "$job" --oneliner 2>/dev/null | grep -o 'JobState=[A-Z_]*')
  [[ $state == JobState=@(PENDING|CONFIGURING|RUNNING|COMPLETING) ]] || break
  sleep 0.2
done
note <"$tmp/batch.out"
if ((rc == 0)) && [ "$state" = JobState=COMPLETED ] && grep -q 'linear: mean grad 1.5, worst loss 1.5' "$tmp/batch.out"
then
  tap "ok - sbatch -n 4 --wrap 'srun --mpi=$mpi quickstart': job $job completed"
else
  tap "not ok - sbatch -n 4 --wrap 'srun --mpi=$mpi quickstart': job '$job' ${state:-not submitted} (exit $rc)"
fi

for exe in "$@"; do
  name=$(basename "$exe")
  srun_job 300 "$exe" --gtest_output="xml:$tmp/$name.xml"
  tap_gtest $? "$name" "[srun -n 4]"
done
tap_end
