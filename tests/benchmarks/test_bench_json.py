#!/usr/bin/env python3
"""mpidist-bench's --json and --csv outputs: exactly the documented fields, consistent numbers
(algbw from bytes and time, busbw from the nccl-tests factor, ratio = time / raw time), and
--compare reading the file back; with --group, rows per group size whose busbw uses the group's
size.

usage: test_bench_json.py MPIEXEC MPIDIST_BENCH
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

RUN_KEYS = {"op", "ranks", "nodes", "backend", "dtype", "redop", "mpi_library", "date", "results"}
ROW_KEYS = {"group", "bytes", "count", "time_us", "time_min_us", "time_max_us", "algbw", "busbw", "wrong",
            "raw_time_us", "ratio"}
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0}


def close(a, b, rel=2e-3, abs_=2e-4):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def check_run(run, op, ranks, groups=None):
    """groups: the --group sizes in order (None: one section, the world)."""
    groups = groups or [ranks]
    # Host tensor ops (all of these) carry the run's memcpy reference.
    assert set(run) == RUN_KEYS | {"memcpy_gbps"}, f"run keys {sorted(run)}"
    assert run["memcpy_gbps"] > 0, run["memcpy_gbps"]
    assert run["op"] == op and run["ranks"] == ranks and run["nodes"] >= 1, run
    assert run["backend"] == "mpi" and run["dtype"] == "float32", run
    assert isinstance(run["mpi_library"], str) and run["mpi_library"], run
    assert run["date"].endswith("Z") and "T" in run["date"], run["date"]
    assert len(run["results"]) >= 2, run["results"]
    # One section per group size, in the order given, the same sizes in each.
    seen = [row["group"] for row in run["results"]]
    assert seen == sorted(seen, key=groups.index) and sorted(set(seen)) == sorted(groups), seen
    assert len(run["results"]) % len(groups) == 0, run["results"]
    for row in run["results"]:
        assert set(row) == ROW_KEYS, f"row keys {sorted(row)}"
        assert row["wrong"] == 0, row
        assert 0 < row["time_min_us"] <= row["time_us"] <= row["time_max_us"], row
        assert close(row["algbw"], row["bytes"] / 1e3 / row["time_us"]), row
        assert close(row["busbw"], row["algbw"] * BUS_FACTOR[op](row["group"])), row
        assert row["raw_time_us"] > 0 and close(row["ratio"], row["time_us"] / row["raw_time_us"]), row


def main():
    mpiexec, bench = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        for op, ranks in (("all_reduce", 2), ("reduce_scatter", 3), ("broadcast", 3)):
            js, cs = os.path.join(tmp, op + ".json"), os.path.join(tmp, op + ".csv")
            cmd = [mpiexec, "-n", str(ranks), bench, op, "-b", "1K", "-e", "256K", "-f", "4", "-n", "5",
                   "-w", "1", "--json", js, "--csv", cs]
            subprocess.run(cmd, check=True, capture_output=True, timeout=60)
            with open(js, encoding="utf-8") as f:
                run = json.load(f)
            check_run(run, op, ranks)
            with open(cs, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
            assert len(rows) == len(run["results"]), (len(rows), len(run["results"]))
            assert all(int(r["bytes"]) == j["bytes"] for r, j in zip(rows, run["results"]))
            assert ROW_KEYS <= set(rows[0]), sorted(rows[0])
            print(f"ok {op} at {ranks} ranks: {len(rows)} sizes")
        # Groups of 2 out of 4 ranks, then the 4 as one group: rows per group size.
        js = os.path.join(tmp, "groups.json")
        subprocess.run([mpiexec, "-n", "4", bench, "all_gather", "-b", "1K", "-e", "64K", "-f", "8", "-n", "5",
                        "-w", "1", "--group", "2,4", "--json", js], check=True, capture_output=True, timeout=60)
        with open(js, encoding="utf-8") as f:
            run = json.load(f)
        check_run(run, "all_gather", 4, [2, 4])
        print(f"ok all_gather --group 2,4 at 4 ranks: {len(run['results'])} rows")
        # --compare against the first run: one line per size, with the change in percent.
        js = os.path.join(tmp, "all_reduce.json")
        out = subprocess.run([mpiexec, "-n", "2", bench, "all_reduce", "-b", "1K", "-e", "256K", "-f", "4",
                              "-n", "5", "-w", "1", "--compare", js], check=True, capture_output=True,
                             text=True, timeout=60).stdout
        assert "# compare with " + js in out, out
        assert sum(1 for line in out.splitlines() if line.strip().endswith("%")) == 5, out
        print("ok --compare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
