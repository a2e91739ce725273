#!/usr/bin/env python3
"""Compiles the tests' precompiled header with the flags of the objects that use it.

    make_pch.py COMPILE_COMMANDS HEADER OUTPUT DEPFILE

GCC takes a .gch only when it was made with the same options as the object being compiled
(-fpie, -fsanitize, the -D macros it mentions, -std), so instead of restating the build's flags
here, this takes them from compile_commands.json: the command of the first object that
-includes HEADER's name, minus its output, source, dependency and -include arguments. Any build
(Open MPI, MPICH, the sanitizers) thus gets a .gch that matches its own test objects. The
depfile names the headers and compile_commands.json, so a changed header or a reconfigured build
makes a new one.
"""
import json
import os
import shlex
import subprocess
import sys


def flags_of_user(commands, name):
    for entry in commands:
        args = entry.get("arguments") or shlex.split(entry["command"])
        if "-include" in args and args[args.index("-include") + 1] == name:
            return entry["directory"], entry["file"], args
    sys.exit(f"make_pch.py: no object in the build -includes {name}")


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
        directory, source, args = flags_of_user(json.load(f), os.path.basename(header))
    command = header_command(args, source, os.path.basename(header)) + [
        "-x", "c++-header", os.path.abspath(header), "-o", os.path.abspath(output),
        "-MD", "-MF", os.path.abspath(depfile), "-MT", os.path.abspath(output)]
    subprocess.run(command, cwd=directory, check=True)
    with open(depfile, "a") as f:  # flags change only in compile_commands.json
        f.write(f"{os.path.abspath(output)}: {os.path.abspath(compile_commands)}\n")


if __name__ == "__main__":
    main()
