#!/usr/bin/env python3
"""mpidist opens no listening socket of its own (issue 9, Security).

Samples `ss -ltnupH` before and while a job of the socket probe (tests/probes/socket_probe.cpp)
waits after using every kind of mpidist call, and attributes each new listening socket to the
job's processes by pid (ss -p). Three runs:
  tcp:     Open MPI's default transports, with its TCP BTL pinned to a port range: every socket a
           rank listens on must lie in that range (the BTL's), everything else in the job is the
           launcher's (mpiexec/orted: its out-of-band channel).
  no-tcp:  --mca btl self,vader: the ranks listen on nothing at all.
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


mca = []
for family in ("v4", "v6"):
    mca += ["--mca", f"btl_tcp_port_min_{family}", str(PORT_MIN), "--mca", f"btl_tcp_port_range_{family}", str(PORT_RANGE)]
if mode == "no-tcp":
    mca = ["--mca", "btl", "self,vader"]
before = listeners()
with tempfile.TemporaryDirectory() as scratch:
    release = os.path.join(scratch, "release")
    job = subprocess.Popen(["mpiexec", "-n", str(ranks)] + mca + [probe, release],
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
    if not by_rank:
        runtime.append(f"{proto} {address} {mine} (Open MPI runtime)")
        continue
    what = f"{proto} {address} owned by " + ", ".join(f"rank {rank_pids[p]} ({n}, pid {p}, fd {f})" for n, p, f in by_rank)
    if proto != "tcp":
        failures.append(what + ": a rank listens on UDP")
    elif mode == "no-tcp":
        failures.append(what + ": with Open MPI's TCP transport off, a rank must listen on nothing")
    elif not PORT_MIN <= port < PORT_MIN + PORT_RANGE:
        failures.append(what + f": outside the TCP BTL's ports [{PORT_MIN}, {PORT_MIN + PORT_RANGE})")
    else:
        runtime.append(what + " (Open MPI's TCP BTL)")

new = sum(1 for key, owners in during.items() if before.get(key) != owners)
print(f"mode {mode}, {ranks} ranks, rank pids {sorted(rank_pids)}: {len(before)} listening sockets on the machine "
      f"before, {len(during)} during ({new} new or changed); those of the job:")
for line in runtime:
    print("  " + line)
if mode == "tcp" and not any("TCP BTL" in line for line in runtime):
    failures.append("no rank listened on the TCP BTL's ports: did the attribution miss them?")
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"ok: no listening socket of mpidist's own ({'only Open MPI' if runtime else 'none at all'})")
