#!/usr/bin/env python3
"""The tree matches the README's map: every folder of lib/ is a row of the table in "How the code is
laid out", and every #include of a library file names a file in its own folder or in one that the
table says it may use. Prints each offending include; exits 1 if there is any.
  usage: check_layers.py [REPO_ROOT]
         check_layers.py --self-test   (proves on a made-up tree that each kind of problem is found)"""
import pathlib
import re
import sys


def problems_in(root):
    """Every way the tree under `root` strays from its README's map, as lines of text."""
    lib = root / "lib"
    # | `lib/core/` | what it holds | `mpi/`, `watch/` or — |
    row = re.compile(r"^\|\s*`lib/([a-z_]+)/`\s*\|[^|]*\|([^|]*)\|\s*$")
    may_use = {}
    for line in (root / "README.md").read_text().splitlines():
        if m := row.match(line):
            may_use[m.group(1)] = set(re.findall(r"`([a-z_]+)/`", m.group(2)))

    problems = []
    if not may_use:
        problems.append("README.md: no table of lib/ folders (rows '| `lib/NAME/` | holds | may use |')")
    folders = {p.name for p in lib.iterdir() if p.is_dir() and any(p.glob("*.[ch]pp"))}
    for name in sorted(folders - may_use.keys()):
        problems.append(f"lib/{name}/ is not in the README's map")
    for name in sorted(may_use.keys() - folders):
        problems.append(f"the README's map names lib/{name}/, which holds no source")
    order = list(may_use)  # the rows, lowest layer first
    for name, uses in may_use.items():
        for used in sorted(uses - may_use.keys()):
            problems.append(f"the README's map lets lib/{name}/ use {used}/, which it does not list")
        for used in sorted(uses & may_use.keys()):
            if order.index(used) >= order.index(name):
                problems.append(f"the README's map lets lib/{name}/ use {used}/, which is not below it")
    for loose in sorted(lib.glob("*.[ch]pp")):
        problems.append(f"lib/{loose.name} belongs in a folder of the map")

    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for path in sorted(lib.rglob("*.[ch]pp")):
        here = path.relative_to(lib).parts[0]
        for target in include.findall(path.read_text()):
            if target.startswith("mpidist/"):
                continue  # the public headers: anyone may use them
            there = target.split("/")[0] if "/" in target else None
            where = f"{path.relative_to(root)}: #include \"{target}\""
            if there is None or not (lib / target).exists():
                problems.append(f"{where}: not a path from lib/ (write \"folder/file.hpp\")")
            elif there != here and there not in may_use.get(here, set()):
                problems.append(f"{where}: lib/{here}/ may not use lib/{there}/ (README, How the code is laid out)")
    return problems


def self_test():
    """A tree with one problem of each kind: the checker must name every one, and none in a clean tree."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        def write(path, text):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        write("README.md", "| folder | holds | may use |\n|---|---|---|\n"
                           "| `lib/low/` | a | — |\n| `lib/high/` | b | `low/` |\n")
        write("lib/low/a.hpp", "#pragma once\n")
        write("lib/high/b.cpp", '#include "low/a.hpp"\n#include "mpidist/error.hpp"\n')
        clean = problems_in(root)
        write("lib/low/c.cpp", '#include "high/b.hpp"\n#include "a.hpp"\n')
        write("lib/high/b.hpp", "#pragma once\n")
        write("lib/stray.cpp", "\n")
        write("lib/extra/d.cpp", "\n")
        found = problems_in(root)
    expected = ["lib/low/ may not use lib/high/", 'not a path from lib/', "lib/stray.cpp belongs in a folder",
                "lib/extra/ is not in the README's map"]
    missed = [e for e in expected if not any(e in p for p in found)]
    if clean or missed:
        print(f"self-test failed: a clean tree gave {clean}; not found: {missed}")
        return 1
    print(f"self-test: a clean tree passes, and all {len(expected)} kinds of problem are found")
    return 0


def main(arguments):
    if arguments[:1] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(arguments[0] if arguments else pathlib.Path(__file__).resolve().parents[2])
    problems = problems_in(root)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s) in the layout of lib/")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
