#!/usr/bin/env python3
"""The library's calls to its own functions bind inside it (lib/meson.build: -Bsymbolic-functions).

    check_local_binding.py LIBRARY

Fails when a PLT slot of LIBRARY (an R_*_JUMP_SLOT relocation, resolved by the dynamic linker at run
time) names a function that LIBRARY itself defines: such a call goes through a PLT stub and a GOT
entry, two more cache lines for a cold call (benchmarks/results/front-end-cold-2026-11-28/). Calls to
other libraries' functions (MPI, CUDA, NCCL, libstdc++) keep their slots. Skips (77) without
readelf.
"""
import shutil
import subprocess
import sys


def readelf(*args):
    return subprocess.run(['readelf', '-W', *args], check=True, capture_output=True, text=True).stdout


def defined_functions(library):
    """Names of the functions the library defines and exports (dynamic symbols not UND)."""
    names = set()
    for line in readelf('--dyn-syms', library).splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(fields) >= 8 and fields[3] in ('FUNC', 'IFUNC') and fields[6] != 'UND':
            names.add(fields[7].split('@')[0])
    return names


def plt_slots(library):
    """Symbol names of the library's PLT slots."""
    names = []
    for line in readelf('--relocs', library).splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[2].endswith('JUMP_SLOT'):
            names.append(fields[4].split('@')[0])
    return names


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which('readelf') is None:
        print('readelf not found: skipped')
        sys.exit(77)
    library = sys.argv[1]
    own = defined_functions(library)
    slots = plt_slots(library)
    through_plt = sorted(name for name in slots if name in own)
    print(f'{library}: {len(slots)} PLT slots, {len(own)} functions of its own, {len(through_plt)} of them called '
          'through a slot')
    for name in through_plt[:20]:
        print(f'  {name}')
    if through_plt:
        print('the library calls its own functions through the PLT: was it linked without -Wl,-Bsymbolic-functions '
              '(lib/meson.build)?')
        sys.exit(1)


if __name__ == '__main__':
    main()
