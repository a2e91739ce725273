#!/usr/bin/env python3
"""Checks the placement `mpidist-info --json` reports (read from stdin, other lines ignored).

    check_placement.py 2,2    4 ranks: ranks 0-1 on one node, 2-3 on another
    check_placement.py 4      4 ranks on one node

Each comma-separated number is a node's rank count, in rank order (how mpiexec's by-slot mapping and
srun's block distribution place ranks). Checks every rank is present once, each node has its own
host name and node_rank, and local_rank counts 0, 1, ... within each node.
"""
import json
import re
import sys

layout = [int(n) for n in sys.argv[1].split(",")]
text = sys.stdin.read()
match = re.search(r"^\[\s*$.*?^\]\s*$", text, re.S | re.M)
if not match:
    sys.exit("no JSON table from mpidist-info in the output")
ranks = sorted(json.loads(match.group(0)), key=lambda r: r["rank"])

problems = []
expected = [(node, local) for node, count in enumerate(layout) for local in range(count)]
if [r["rank"] for r in ranks] != list(range(len(expected))):
    problems.append(f"ranks {[r['rank'] for r in ranks]}, expected 0..{len(expected) - 1}")
else:
    for r, (node, local) in zip(ranks, expected):
        if (r["node_rank"], r["local_rank"]) != (node, local):
            problems.append(f"rank {r['rank']} is node {r['node_rank']} local {r['local_rank']}, "
                            f"expected node {node} local {local}")
    hosts = [{r["hostname"] for r in ranks if r["node_rank"] == node} for node in range(len(layout))]
    if any(len(h) != 1 for h in hosts) or len(set.union(*hosts)) != len(layout):
        problems.append(f"host names per node {hosts}: expected one distinct name per node")
for p in problems:
    print("placement:", p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"placement: {len(ranks)} ranks on {len(layout)} node(s) {layout}, hosts "
      + ", ".join(sorted({r['hostname'] for r in ranks})))
