#!/usr/bin/env python3
"""Smoke test of mpidist-bench: every op at 2 and 3 ranks with the data check on, plus a few
variants (in place, other reductions and types, root = last rank), and the tensor ops inside
groups (--group 2 at 4 ranks). A run fails on a non-zero exit, which the benchmark returns for
any wrong value.

usage: test_bench_smoke.py MPIEXEC MPIDIST_BENCH
"""
import re
import subprocess
import sys
import time

TENSOR_OPS = ["all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce", "barrier"]
P2P_OPS = ["sendrecv", "all_to_all", "all_to_all_v", "all_gather_v", "gather", "scatter"]
OPS = TENSOR_OPS + ["object_broadcast", "object_all_gather"]
QUICK = ["-b", "8", "-e", "64K", "-f", "32", "-n", "3", "-w", "1", "-c", "1"]


def cases():
    for np in (2, 3):
        for op in OPS:
            yield np, [op] + QUICK
    yield 3, ["all_reduce", "-d", "float16", "-o", "avg", "--in-place"] + QUICK
    yield 2, ["all_reduce", "-d", "int8", "-o", "max"] + QUICK
    yield 3, ["reduce_scatter", "-d", "bfloat16", "-o", "min", "--in-place"] + QUICK
    yield 3, ["all_gather", "-d", "int64", "--in-place"] + QUICK
    yield 3, ["reduce", "-r", "2", "-o", "prod", "-d", "float64"] + QUICK
    yield 3, ["broadcast", "-r", "2", "-d", "uint8"] + QUICK
    yield 3, ["all_reduce", "-d", "uint32", "-o", "avg"] + QUICK
    yield 2, ["reduce_scatter", "-d", "uint64", "-o", "max"] + QUICK
    yield 3, ["object_broadcast", "-r", "2", "-d", "int32"] + QUICK
    # Groups of 2 consecutive ranks out of 4: every group checks its own result.
    for op in TENSOR_OPS:
        yield 4, [op, "--group", "2"] + QUICK
    yield 4, ["reduce", "-r", "1", "-o", "max", "-d", "int32", "--in-place", "--group", "2,4"] + QUICK
    yield 4, ["object_broadcast", "-r", "1", "--group", "2"] + QUICK
    yield 4, ["object_all_gather", "--group", "2"] + QUICK
    # Point-to-point and the uneven collectives: once at 3 ranks (an odd rank out of sendrecv's
    # pairs, uneven splits), in groups of 2, and rooted at the last rank.
    for op in P2P_OPS:
        yield 3, [op] + QUICK
        yield 4, [op, "--group", "2", "-d", "int64"] + QUICK
    yield 3, ["gather", "-r", "2", "-d", "uint8"] + QUICK
    yield 3, ["scatter", "-r", "1", "-d", "float64"] + QUICK


def progress_failures(mpiexec, bench):
    """With stdout not a terminal (captured here), rank 0 reports each finished size on stderr."""
    proc = subprocess.run([mpiexec, "-n", "2", bench, "all_reduce"] + QUICK, capture_output=True, text=True,
                          timeout=60)
    lines = re.findall(r"^mpidist-bench: all_reduce (\d+)/(\d+) done \((\w+)\), [0-9.]+ s elapsed",
                       proc.stderr, re.MULTILINE)
    sizes = ["8", "256", "8K", "64K"]  # QUICK: -b 8 -e 64K -f 32
    if proc.returncode != 0 or lines != [(str(k + 1), str(len(sizes)), s) for k, s in enumerate(sizes)]:
        print(f"FAIL progress lines {lines}: exit {proc.returncode}\n{proc.stderr}")
        return 1
    print("ok   progress: a stderr line per size")
    return 0


def main():
    mpiexec, bench = sys.argv[1], sys.argv[2]
    failures = 0
    start = time.time()
    for np, args in cases():
        cmd = [mpiexec, "-n", str(np), bench] + args
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        ok = proc.returncode == 0 and "# Wrong values       : 0 OK" in proc.stdout
        print(("ok  " if ok else "FAIL") + f" np={np} " + " ".join(args))
        if not ok:
            failures += 1
            print(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    # Bad input is refused with exit code 2 and a message naming the value.
    proc = subprocess.run([mpiexec, "-n", "2", bench, "broadcast", "-r", "5"], capture_output=True, text=True, timeout=60)
    if proc.returncode == 0 or "-r 5 out of range" not in proc.stderr:
        failures += 1
        print(f"FAIL bad root accepted: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    for np, args, message in ((4, ["all_reduce", "--group", "3"], "--group 3 does not divide the 4 ranks"),
                              (4, ["broadcast", "-r", "2", "--group", "2"], "-r 2 out of range for 2 ranks"),
                              (2, ["all_to_all", "--in-place"], "all_to_all has no in-place form")):
        proc = subprocess.run([mpiexec, "-n", str(np), bench] + args, capture_output=True, text=True, timeout=60)
        if proc.returncode == 0 or message not in proc.stderr:
            failures += 1
            print(f"FAIL {' '.join(args)} accepted: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    failures += progress_failures(mpiexec, bench)
    print(f"{failures} failures in {time.time() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
