# The ratios of compare.sh's runs: per layout and size, each run's mpidist / MPI, old and new.
import json,glob,sys
rows={}
for f in glob.glob(sys.argv[1]+'/*/*.json'):
    lib=f.split('/')[-2].split('-')[0]; lay=f.split('-')[-1][:-5]
    for r in json.load(open(f))['results']:
        rows.setdefault((lay,r['bytes'],lib),[]).append(r['ratio'])
keys=sorted({(k[0],k[1]) for k in rows})
print(f"{'layout':>6} {'bytes':>9} {'old / MPI (each run)':>20} {'new / MPI (each run)':>20}")
for lay,b in keys:
    o=rows.get((lay,b,'old'),[]); n=rows.get((lay,b,'new'),[])
    print(f"{lay:>6} {b:>9} {' '.join(f'{x:.2f}' for x in sorted(o)):>20} {' '.join(f'{x:.2f}' for x in sorted(n)):>20}")
