#!/usr/bin/env python3
"""benchmarks/plot turns mpidist-bench JSON into a PNG. Skipped (exit 77) without matplotlib.

usage: test_bench_plot.py PLOT_SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed for", sys.executable, "- skipping")
    sys.exit(77)


def sample(op, ranks, scale):
    rows = []
    for k in range(3, 21, 3):
        size = 1 << k
        t = (1.0 + size / 2e3) * scale
        raw = 1.0 + size / 2e3
        algbw = size / 1e3 / t
        rows.append({"bytes": size, "count": size // 4, "time_us": t, "time_min_us": t * 0.9,
                     "time_max_us": t * 1.3, "algbw": algbw, "busbw": algbw * 2 * (ranks - 1) / ranks,
                     "wrong": 0, "raw_time_us": raw, "ratio": t / raw})
    return {"op": op, "ranks": ranks, "nodes": 1, "backend": "mpi", "dtype": "float32", "redop": "sum",
            "mpi_library": "Open MPI v4.1.4", "date": "2026-01-01T00:00:00Z", "results": rows}


def main():
    plot = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for name, scale in (("a", 1.02), ("b", 1.2)):
            path = os.path.join(tmp, name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(sample("all_reduce", 2, scale), f)
            inputs.append(path)
        png = os.path.join(tmp, "out.png")
        subprocess.run([sys.executable, plot, *inputs, "-o", png], check=True, timeout=120)
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
        assert os.path.getsize(png) > 10000, os.path.getsize(png)
        # A file that is not a benchmark run is refused with a message, not a traceback.
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w", encoding="utf-8") as f:
            json.dump({"op": "x"}, f)
        proc = subprocess.run([sys.executable, plot, bad, "-o", png], capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and "missing" in proc.stderr, proc.stderr
    print("ok plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
