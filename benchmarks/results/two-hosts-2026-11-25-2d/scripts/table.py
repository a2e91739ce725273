# Medians of the runs' ratios (mpidist / raw MPI_Allreduce, interleaved in each run) per variant,
# layout and size, and the bytes that crossed the veth per run: python3 table.py RESULTS_DIR
import glob, json, re, statistics as st, sys
R = sys.argv[1]
def load(v, l):
    out = {}
    for f in sorted(glob.glob(f'{R}/{v}/run*/all_reduce-{l}.json')):
        for r in json.load(open(f))['results']: out.setdefault(r['bytes'], []).append(r['ratio'])
    return out
def veth(v, l):
    got = []
    for f in sorted(glob.glob(f'{R}/{v}/run*/all_reduce-{l}.txt')):
        m = re.search(r'; (\d+) bytes crossed', open(f).read())
        if m: got.append(int(m.group(1)))
    return got
def cell(x): return f'**{st.median(x):.2f}** ({min(x):.2f}-{max(x):.2f})' if x else '-'
def fmt(b): return f'{b >> 20} MiB' if b >= 1 << 20 else f'{b >> 10} KiB' if b >= 1024 else f'{b} B'
variants = sys.argv[2].split(',') if len(sys.argv) > 2 else ['2d', 'shm', 'mpi', 'auto']
for l in ['2+2', '3+1', '1+1']:
    data = {v: load(v, l) for v in variants}
    present = [v for v in variants if data[v]]
    if not present: continue
    n = {v: len(glob.glob(f'{R}/{v}/run*/all_reduce-{l}.json')) for v in present}
    print(f'\n**{l}**\n')
    print('| size | ' + ' | '.join(f'`{v}` ({n[v]} runs)' for v in present) + ' |')
    print('|---:|' + '---:|' * len(present))
    for b in sorted(data[present[0]]):
        print(f'| {fmt(b)} | ' + ' | '.join(cell(data[v].get(b, [])) for v in present) + ' |')
    print('\nbytes over the veth per run (GB): ' + '; '.join(f'`{v}` ' + ', '.join(f'{x / 1e9:.2f}' for x in veth(v, l)) for v in present))
