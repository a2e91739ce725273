#!/usr/bin/env python3
"""benchmarks/plot turns mpidist-bench JSON into a PNG with three panels: bus bandwidth, latency
and the mpidist/raw overhead. Checked twice: the figure the script draws (three axes, their titles
and lines), and the PNG it writes (its pixel size, and three framed panels found in its pixels).
Skipped (exit 77) without matplotlib; tests/setup.sh installs python3-matplotlib.

usage: test_bench_plot.py PLOT_SCRIPT
"""
import importlib.machinery
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed for", sys.executable, "- skipping")
    sys.exit(77)

# The script's figure: figsize (17, 4.8) inches saved at 110 dpi.
PNG_SIZE = (1870, 528)
TITLES = ["bus bandwidth", "latency", "overhead (1.05: the target at >= 64 KiB)"]


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


def png_size(path):
    """(width, height) from the PNG's IHDR chunk."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert head[12:16] == b"IHDR", head[12:16]
    return struct.unpack(">II", head[16:24])


def framed_panels(path):
    """Panels in the image: each axes frame has a dark left and right spine, a vertical line of
    dark pixels spanning much of the height (grid lines are light, ticks and text short)."""
    import matplotlib.image
    pixels = matplotlib.image.imread(path)
    dark = pixels[:, :, :3].mean(axis=2) < 0.35
    height = dark.shape[0]
    columns = [x for x in range(dark.shape[1]) if dark[:, x].sum() > 0.4 * height]
    lines = [x for i, x in enumerate(columns) if i == 0 or x > columns[i - 1] + 1]  # adjacent columns: one line
    assert len(lines) % 2 == 0, f"unpaired spines at columns {lines}"
    return len(lines) // 2


def check_figure(plot, inputs, png):
    """The figure itself, from the script's own draw()."""
    loader = importlib.machinery.SourceFileLoader("mpidist_plot", plot)
    spec = importlib.util.spec_from_loader("mpidist_plot", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    fig = module.draw([(path, module.load(path)) for path in inputs], png, None)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == TITLES, [ax.get_title() for ax in axes]
    for ax in axes:
        assert ax.get_xscale() == "log", (ax.get_title(), ax.get_xscale())
        curves = [line for line in ax.get_lines() if len(line.get_xdata()) == 6]
        # Two files: mpidist and raw in the first two panels, the ratio alone in the third.
        expected = 2 if ax is axes[2] else 4
        assert len(curves) == expected, (ax.get_title(), len(curves))
    assert axes[1].get_yscale() == "log"


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
        assert png_size(png) == PNG_SIZE, png_size(png)
        assert os.path.getsize(png) > 10000, os.path.getsize(png)
        panels = framed_panels(png)
        assert panels == 3, f"{panels} framed panels in the PNG, expected 3"
        check_figure(plot, inputs, os.path.join(tmp, "figure.png"))
        # A file that is not a benchmark run is refused with a message, not a traceback.
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w", encoding="utf-8") as f:
            json.dump({"op": "x"}, f)
        proc = subprocess.run([sys.executable, plot, bad, "-o", png], capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and "missing" in proc.stderr, proc.stderr
    print(f"ok plot: {PNG_SIZE[0]}x{PNG_SIZE[1]} PNG, 3 panels ({', '.join(TITLES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
