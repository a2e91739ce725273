#!/usr/bin/env python3
"""mpidist opens no listening socket of its own (issue 9, Security).

Samples `ss -ltnupH` before and while a job of the socket probe (tests/probes/socket_probe.cpp)
waits after using every kind of mpidist call, and attributes each new listening socket to the
job's processes by pid (ss -p). Two runs per MPI (MPIDIST_TEST_MPI: openmpi or mpich, launched
with MPIDIST_TEST_MPIEXEC):
  tcp:     the MPI's default transports, with its TCP transport pinned to a port range (Open MPI's
           TCP BTL, or UCX's tcp transport under MPICH ch4:ucx): every socket a rank listens on
           must lie in that range; everything else in the job is the launcher's (mpiexec/orted,
           Hydra's proxy: sockets the ranks inherited from it are the launcher's too).
  no-tcp:  shared memory only (--mca btl self,vader; UCX_TLS=self,sm): the ranks listen on nothing
           of their own.
and asserts the ranks own no UDP socket either. Prints the listeners it attributed.
    listening_sockets.py PROBE MODE RANKS
"""
import os
import re
import subprocess
import sys
import tempfile
import time

probe, mode, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
PORT_MIN, PORT_RANGE = 47100, 200


def listeners():
    """{(proto, local address): [(process name, pid, fd)]} of every listening socket."""
    out = subprocess.run(["ss", "-ltnupH"], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        owners = [(n, int(p), int(f)) for n, p, f in re.findall(r'\("([^"]+)",pid=(\d+),fd=(\d+)\)', line)]
        found[(fields[0], fields[4])] = owners
    return found


def descendants(pid):
    """pid and every process below it."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True, check=True).stdout
    children = {}
    for line in out.splitlines():
        p, pp = map(int, line.split())
        children.setdefault(pp, []).append(p)
    todo, seen = [pid], set()
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(children.get(p, []))
    return seen


mpi = os.environ.get("MPIDIST_TEST_MPI", "openmpi")
mpiexec = os.environ.get("MPIDIST_TEST_MPIEXEC", "mpiexec")
env = dict(os.environ)
options = []
if mpi == "mpich":
    transport = "UCX's tcp transport"
    if mode == "no-tcp":
        env["UCX_TLS"] = "self,sm"
    else:
        env["UCX_TCP_PORT_RANGE"] = f"{PORT_MIN}-{PORT_MIN + PORT_RANGE - 1}"
else:
    transport = "Open MPI's TCP BTL"
    for family in ("v4", "v6"):
        options += ["--mca", f"btl_tcp_port_min_{family}", str(PORT_MIN),
                    "--mca", f"btl_tcp_port_range_{family}", str(PORT_RANGE)]
    if mode == "no-tcp":
        options = ["--mca", "btl", "self,vader"]
before = listeners()
with tempfile.TemporaryDirectory() as scratch:
    release = os.path.join(scratch, "release")
    job = subprocess.Popen([mpiexec, "-n", str(ranks)] + options + [probe, release], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rank_pids, output = {}, []
    deadline = time.time() + 120
    while len(rank_pids) < ranks and time.time() < deadline:
        line = job.stdout.readline()
        if not line:
            break
        output.append(line)
        m = re.match(r"SOCKET_PROBE rank (\d+) pid (\d+) ready", line)
        if m:
            rank_pids[int(m.group(2))] = int(m.group(1))
    if len(rank_pids) < ranks:
        job.kill()
        sys.exit("the probe did not get ready:\n" + "".join(output) + job.stdout.read())
    during = listeners()
    job_pids = descendants(job.pid)
    open(release, "w").close()
    rest, _ = job.communicate(timeout=120)
    output.append(rest)
    if job.returncode != 0:
        sys.exit(f"the probe failed ({job.returncode}):\n" + "".join(output))

failures = []
runtime = []
for (proto, address), owners in sorted(during.items()):
    mine = [o for o in owners if o[1] in job_pids]
    if not mine:
        continue  # another process of the machine
    port = int(address.rsplit(":", 1)[1])
    by_rank = [o for o in mine if o[1] in rank_pids]
    # Descriptors pass from parent to child only: a socket the launcher holds too is the launcher's.
    if not by_rank or len(by_rank) < len(mine):
        runtime.append(f"{proto} {address} {mine} ({mpi} launcher)")
        continue
    what = f"{proto} {address} owned by " + ", ".join(f"rank {rank_pids[p]} ({n}, pid {p}, fd {f})" for n, p, f in by_rank)
    if proto != "tcp":
        failures.append(what + ": a rank listens on UDP")
    elif mode == "no-tcp":
        failures.append(what + f": with {transport} off, a rank must listen on nothing")
    elif not PORT_MIN <= port < PORT_MIN + PORT_RANGE:
        failures.append(what + f": outside the ports of {transport} [{PORT_MIN}, {PORT_MIN + PORT_RANGE})")
    else:
        runtime.append(what + f" ({transport})")

new = sum(1 for key, owners in during.items() if before.get(key) != owners)
print(f"mode {mode}, {ranks} ranks, rank pids {sorted(rank_pids)}: {len(before)} listening sockets on the machine "
      f"before, {len(during)} during ({new} new or changed); those of the job:")
for line in runtime:
    print("  " + line)
if mode == "tcp" and not any(transport in line for line in runtime):
    failures.append(f"no rank listened on the ports of {transport}: did the attribution miss them?")
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
owners = f"only {mpi}'s" if runtime else "none at all"
print(f"ok: no listening socket of mpidist's own ({owners})")
