# The ratios of compare.sh's runs: per layout and size, each library's mpidist / MPI of every run
# (sorted) and their median.
import glob, json, statistics, sys

rows, libs = {}, []
for f in sorted(glob.glob(sys.argv[1] + '/*/*.json')):
    lib = f.split('/')[-2].rsplit('-', 1)[0]
    lay = f.split('-')[-1][:-5]
    if lib not in libs:
        libs.append(lib)
    for r in json.load(open(f))['results']:
        rows.setdefault((lay, r['bytes'], lib), []).append(r['ratio'])
cells = sorted({(k[0], k[1]) for k in rows})
print(f"{'layout':>6} {'bytes':>8} " + ' '.join(f"{lib + ' / MPI (median: runs)':>34}" for lib in libs))
for lay, b in cells:
    line = f"{lay:>6} {b:>8} "
    for lib in libs:
        runs = sorted(rows.get((lay, b, lib), []))
        text = f"{statistics.median(runs):.2f}: " + ' '.join(f'{x:.2f}' for x in runs) if runs else '-'
        line += f"{text:>34} "
    print(line.rstrip())
