# Fills the README's summary cells (@NAME@) with the range of the per-size medians in each band:
# python3 fill.py RESULTS_DIR README
import glob, json, statistics as st, sys
R, readme = sys.argv[1], sys.argv[2]
def med(v, l):
    out = {}
    for f in sorted(glob.glob(f'{R}/{v}/run*/all_reduce-{l}.json')):
        for r in json.load(open(f))['results']: out.setdefault(r['bytes'], []).append(r['ratio'])
    return {b: st.median(x) for b, x in out.items()}
bands = {'S': (0, 4096), 'M': (16384, 262144), 'L': (1 << 20, 1 << 26)}
def rng(m, band):
    lo, hi = bands[band]
    xs = [x for b, x in m.items() if lo <= b <= hi]
    return f'{min(xs):.2f}-{max(xs):.2f}'
cells = {}
for key, v, l in [('MPI22', 'mpi', '2+2'), ('TWOD22', '2d', '2+2'), ('SHM22', 'shm', '2+2'), ('SHM31', 'shm', '3+1')]:
    m = med(v, l)
    for band in bands: cells[f'{key}{band}'] = rng(m, band)
# 1+1 under auto: MPI below 16 KiB, the leader path from it (the runs forced each).
mpi11, shm11 = med('mpi', '1+1'), med('shm', '1+1')
auto11 = {b: (mpi11[b] if b < 16384 else shm11[b]) for b in mpi11}
for band in bands: cells[f'AUTO11{band}'] = rng(auto11, band)
text = open(readme).read()
for k, v in cells.items(): text = text.replace(f'@{k}@', v)
open(readme, 'w').write(text)
print(cells)
