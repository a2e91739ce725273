#!/usr/bin/env python3
"""Checks the placement `mpidist-info --json` reports (read from stdin, other lines ignored).

    check_placement.py 2,2              4 ranks: ranks 0-1 on one node, 2-3 on another
    check_placement.py 4                4 ranks on one node
    check_placement.py nodes=0,1,0,1    4 ranks: 0 and 2 on one node, 1 and 3 on another

Each comma-separated number is a node's rank count, in rank order (how mpiexec's by-slot mapping and
srun's block distribution place ranks); after "nodes=", each rank's node (mpiexec --map-by node).
Checks every rank is present once, each node has its own host name and node_rank, and local_rank
counts 0, 1, ... within each node, in rank order.
"""
import json
import re
import sys

spec = sys.argv[1]
if spec.startswith("nodes="):
    rank_nodes = [int(n) for n in spec[len("nodes="):].split(",")]
else:
    rank_nodes = [node for node, count in enumerate(int(n) for n in spec.split(",")) for _ in range(count)]
layout = [rank_nodes.count(node) for node in range(max(rank_nodes) + 1)]
text = sys.stdin.read()
match = re.search(r"^\[\s*$.*?^\]\s*$", text, re.S | re.M)
if not match:
    sys.exit("no JSON table from mpidist-info in the output")
ranks = sorted(json.loads(match.group(0)), key=lambda r: r["rank"])

problems = []
expected = [(node, rank_nodes[:rank].count(node)) for rank, node in enumerate(rank_nodes)]
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
print(f"placement: {len(ranks)} ranks on {len(layout)} node(s) {spec}, hosts "
      + ", ".join(sorted({r['hostname'] for r in ranks})))
