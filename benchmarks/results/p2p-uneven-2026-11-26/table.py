#!/usr/bin/env python3
"""table.py RUNDIR...: mpidist / MPI per op, rank count and size from sweep.sh's JSON (one column
per run), and, for sendrecv, the one-way time added at the small sizes (half the round trip)."""
import json, pathlib, sys

def size(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"

runs = [pathlib.Path(a) for a in sys.argv[1:]]
for np in (2, 4):
    for op in ("sendrecv", "all_to_all", "all_to_all_v", "all_gather_v", "gather", "scatter"):
        cells = {}
        for i, run in enumerate(runs):
            for tag in ("sweep", "64M", "bandwidth"):
                f = run / f"{op}-np{np}-{tag}.json"
                if not f.exists():
                    continue
                for r in json.load(open(f))["results"]:
                    extra = ""
                    if op == "sendrecv" and r["bytes"] <= 64:
                        extra = f" (+{(r['time_us'] - r['raw_time_us']) / 2:.2f} us)"
                    cells.setdefault(r["bytes"], [""] * len(runs))[i] = f"{r['ratio']:.2f}{extra}"
        if not cells:
            continue
        print(f"\n### {op}, {np} ranks\n")
        print("| size | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " |")
        print("|---:|" + "---:|" * len(runs))
        for b in sorted(cells):
            print(f"| {size(b)} | " + " | ".join(cells[b]) + " |")
