#!/usr/bin/env python3
"""benchmarks/targets_across_hosts, checked twice (TAP):
  1. its verdicts, from sweeps written here with known ratios (--summarize): the median and the
     largest run against each target, the stricter rule at 2+2 from 1 MiB, the control's column,
     and a refusal of bad flags;
  2. a whole quick run across two real hosts (network namespaces, as tests/hosts/ makes them) at
     1+1: every sweep ran, the table and JSON name every op. Skipped where the hosts cannot be made
     (not root, no `ip`).

usage: test_targets_across_hosts.py SCRIPT MPIDIST_BENCH
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

script, bench = sys.argv[1], sys.argv[2]
checks = []
skipped = 0


def check(name, ok, detail=""):
    checks.append(ok)
    print(f"{'ok' if ok else 'not ok'} {len(checks)} - {name}{'' if ok else ': ' + detail}", flush=True)


def sweep(outdir, run, mode, op, tag, layout, ratios):
    where = os.path.join(outdir, "runs", f"r{run}-{mode}", op + (f"-{tag}" if tag else ""))
    os.makedirs(where, exist_ok=True)
    rows = [{"bytes": size, "ratio": ratio} for size, ratio in ratios.items()]
    with open(os.path.join(where, f"{op}-{layout}.json"), "w", encoding="utf-8") as f:
        json.dump({"op": op, "results": rows}, f)


def verdicts(outdir):
    out = subprocess.run([sys.executable, script, outdir, "--summarize"], capture_output=True, text=True, check=False)
    with open(os.path.join(outdir, "targets.json"), encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    return out, {(r["op"], r["variant"], r["layout"], r["bytes"]): r for r in rows}


with tempfile.TemporaryDirectory() as tmp:
    # 1. Known ratios: three runs of all_reduce at 2+2 and 3+1, a broadcast root, a control run.
    MiB = 1 << 20
    runs = [{4: 0.98, 1024: 1.00, MiB: 0.99, 4 * MiB: 1.00},
            {4: 0.97, 1024: 1.06, MiB: 0.97, 4 * MiB: 0.99},
            {4: 0.99, 1024: 0.95, MiB: 0.98, 4 * MiB: 1.01}]
    for run, ratios in enumerate(runs, 1):
        sweep(tmp, run, "auto", "all_reduce", "small" if run % 2 else "large", "2+2", ratios)
        sweep(tmp, run, "auto", "all_reduce", "small", "3+1", {MiB: [1.00, 0.99, 1.00][run - 1]})
        sweep(tmp, run, "mpi", "all_reduce", "small", "2+2", {4: 1.04})
    sweep(tmp, 1, "auto", "broadcast", "root3", "3+1", {16: 1.01, 4096: 0.60})
    out, rows = verdicts(tmp)
    check("the summary runs", out.returncode == 0, out.stderr)
    cell = rows.get(("all_reduce", "", "2+2", 4), {})
    check("a cell holds every run's ratio, in order", cell.get("ratios") == [0.98, 0.97, 0.99], str(cell))
    check("medians and runs under the limits: met", cell.get("met") is True, str(cell))
    check("the control's median beside it", cell.get("mpi_median") == 1.04, str(cell))
    check("a run above 1.05 fails a cell whose median is 1.00",
          rows.get(("all_reduce", "", "2+2", 1024), {}).get("met") is False, str(rows.get(("all_reduce", "", "2+2", 1024))))
    check("2+2 from 1 MiB: a median below 1.00 is met",
          rows.get(("all_reduce", "", "2+2", MiB), {}).get("met") is True, str(rows.get(("all_reduce", "", "2+2", MiB))))
    check("2+2 from 1 MiB: a median of 1.00 is not faster than MPI",
          rows.get(("all_reduce", "", "2+2", 4 * MiB), {}).get("met") is False, str(rows.get(("all_reduce", "", "2+2", 4 * MiB))))
    check("3+1 at 1 MiB: a median of 1.00 is met (never slower)",
          rows.get(("all_reduce", "", "3+1", MiB), {}).get("met") is True, str(rows.get(("all_reduce", "", "3+1", MiB))))
    b16, b4k = rows.get(("broadcast", "root3", "3+1", 16), {}), rows.get(("broadcast", "root3", "3+1", 4096), {})
    check("the other collectives: never slower than MPI", b16.get("met") is False and b4k.get("met") is True, f"{b16} {b4k}")
    with open(os.path.join(tmp, "targets.md"), encoding="utf-8") as f:
        md = f.read()
    check("targets.md counts the cells and names each table",
          md.startswith("# Across-hosts targets: 4 of 7 cells met") and "### broadcast from root 3 at 3+1" in md, md[:200])
    bad = subprocess.run([sys.executable, script, tmp, "--layouts", "2-2"], capture_output=True, text=True, check=False)
    check("a layout that is not A+B is refused", bad.returncode == 2 and "2-2" in bad.stderr, bad.stderr)
    bad = subprocess.run([sys.executable, script, tmp, "--ops", "gather"], capture_output=True, text=True, check=False)
    check("an op it has no target for is refused", bad.returncode == 2 and "gather" in bad.stderr, bad.stderr)

    # 2. The whole chain across two real hosts.
    real = os.path.join(tmp, "real")
    if os.geteuid() != 0 or shutil.which("ip") is None:
        skipped = 1
        print(f"ok {len(checks) + 1} - a quick run across two hosts # SKIP needs root and ip")
    else:
        env = dict(os.environ, MPIDIST_BENCH=bench)
        out = subprocess.run([sys.executable, script, real, "--quick", "--runs", "1", "--layouts", "1+1", "--control"],
                             capture_output=True, text=True, env=env, check=False, timeout=240)
        progress = [line for line in out.stderr.splitlines() if line.startswith("[")]
        check("a quick run across two hosts: every sweep ran", out.returncode == 0 and len(progress) == 14
              and all("exit 0" in line for line in progress), out.stderr[-2000:])
        _, rows = verdicts(real)
        ops = {(op, variant) for op, variant, _, _ in rows}
        check("... and the table has every op, both broadcast roots",
              ops == {("all_reduce", ""), ("broadcast", "root0"), ("broadcast", "root1"), ("all_gather", ""),
                      ("reduce_scatter", ""), ("all_to_all", "")}, str(sorted(ops)))
        check("... with the control's column filled",
              all(r["mpi_median"] is not None for r in rows.values()), str(list(rows.values())[:2]))

print(f"1..{len(checks) + skipped}")
sys.exit(0 if all(checks) else 1)
