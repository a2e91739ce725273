import json, glob, statistics as st
R='/work/wt-hosts/benchmarks/results/two-hosts-2026-11-25'
def load(pattern):
    out={}
    for f in sorted(glob.glob(pattern)):
        for r in json.load(open(f))['results']: out.setdefault(r['bytes'],[]).append(r['ratio'])
    return out
def cell(x): return f'**{st.median(x):.2f}** ({min(x):.2f}-{max(x):.2f})' if x else '-'
def fmt(b): return f'{b>>20} MiB' if b>=1<<20 else f'{b>>10} KiB'
for l in ['1+1','2+2','3+1']:
    before=load(f'{R}/run*/all_reduce-{l}.json')
    shm=load(f'{R}/after-crossover/shm/run*/all_reduce-{l}.json')
    mpi=load(f'{R}/after-crossover/mpi/run*/all_reduce-{l}.json')
    auto=load(f'{R}/after-crossover/auto/run*/all_reduce-{l}.json')
    print(f'\n**{l}**\n')
    print('| size | before: `auto` (5 runs) | `shm`: hierarchical (8 runs) | `mpi` (8 runs) | after: `auto` (5 runs) |')
    print('|---:|---:|---:|---:|---:|')
    for b in sorted(auto):
        print(f'| {fmt(b)} | {cell(before.get(b,[]))} | {cell(shm[b])} | {cell(mpi[b])} | {cell(auto[b])} |')
