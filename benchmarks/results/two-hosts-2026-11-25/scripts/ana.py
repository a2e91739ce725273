import json, sys, glob, statistics as st, os
root=sys.argv[1]; variants=sys.argv[2].split(',')
layouts=['1+1','2+2','3+1']
def load(v,l):
    out={}
    for f in sorted(glob.glob(f'{root}/{v}/run*/all_reduce-{l}.json')):
        for r in json.load(open(f))['results']:
            out.setdefault(r['bytes'],[]).append(r['ratio'])
    return out
def fmt(b):
    return f'{b>>20} MiB' if b>=1<<20 else (f'{b>>10} KiB' if b>=1024 else f'{b} B')
for l in layouts:
    d={v:load(v,l) for v in variants}
    sizes=sorted(set().union(*[set(x) for x in d.values()]))
    print(f'\n{l}: ratio to MPI_Allreduce, median (min-max) of n runs')
    print('| size | '+' | '.join(variants)+' |'); print('|---:|'+'---:|'*len(variants))
    for b in sizes:
        cells=[]
        for v in variants:
            x=d[v].get(b,[])
            cells.append(f'**{st.median(x):.2f}** ({min(x):.2f}-{max(x):.2f}) n={len(x)}' if x else '-')
        print(f'| {fmt(b)} | '+' | '.join(cells)+' |')
