#!/usr/bin/env python3
"""Compiles the tests' precompiled header with the flags of the objects that use it.

    make_pch.py COMPILE_COMMANDS HEADER OUTPUT DEPFILE

GCC takes a .gch only when it was made with the same options as the object being compiled
(-fpie, -fsanitize, -O, the -D macros it mentions, -std), so instead of restating the build's
flags here, this takes them from compile_commands.json: the commands of the objects that
-include HEADER's name, minus their output, source, dependency and -include arguments. Any build
(Open MPI, MPICH, the sanitizers) thus gets .gch files that match its own test objects. OUTPUT is
a directory, which GCC searches for a .gch that fits: one per set of flags the objects use,
-I and -D aside (the sanitizer build compiles some programs at -O0, tests/meson.build). The
depfile names the headers and compile_commands.json, so a changed header or a reconfigured build
makes new ones.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys


def distinct_users(commands, name):
    """(directory, header command) of the first object -including name per set of flags that
    matters to a .gch: include paths and macros the header does not test may differ."""
    found = {}
    for entry in commands:
        args = entry.get("arguments") or shlex.split(entry["command"])
        if "-include" in args and args[args.index("-include") + 1] == name:
            kept = header_command(args, entry["file"], name)
            key = tuple(arg for arg in kept if not arg.startswith(("-I", "-D")))
            found.setdefault(key, (entry["directory"], kept))
    if not found:
        sys.exit(f"make_pch.py: no object in the build -includes {name}")
    return list(found.values())


def header_command(args, source, name):
    kept, skip = [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("-o", "-MQ", "-MF", "-MT") or (arg == "-include" and args[i + 1] == name):
            skip = True
        elif arg not in ("-c", "-MD", "-MMD", "-fpch-deps", source):
            kept.append(arg)
    return kept


def main():
    compile_commands, header, output, depfile = sys.argv[1:]
    with open(compile_commands) as f:
        users = distinct_users(json.load(f), os.path.basename(header))
    output, depfile = os.path.abspath(output), os.path.abspath(depfile)
    if os.path.isdir(output):
        shutil.rmtree(output)
    elif os.path.exists(output):
        os.remove(output)
    os.mkdir(output)
    with open(depfile, "w") as deps:
        for i, (directory, flags) in enumerate(users):
            part = f"{depfile}.{i}"
            subprocess.run(flags + ["-x", "c++-header", os.path.abspath(header), "-o", f"{output}/{i}.gch",
                                    "-MD", "-MF", part, "-MT", output], cwd=directory, check=True)
            with open(part) as f:
                deps.write(f.read())
            os.remove(part)
        deps.write(f"{output}: {os.path.abspath(compile_commands)}\n")  # flags change only there


if __name__ == "__main__":
    main()
