# The tables of README.md: python3 bands.py FOLDER mpi,shm,auto (medians of the runs per size, their range per band, the largest single run in brackets).
import sys,statistics,os,glob
bands=[("4-256 B",4,256),("1-16 KiB",1024,16384),("64-256 KiB",65536,262144),("1-4 MiB",1<<20,4<<20),("16-64 MiB",16<<20,64<<20)]
def med(d, mode, root, layout):
    vals={}
    for f in sorted(glob.glob(f"{d}/r*-{mode}-root{root}-broadcast-{layout}.txt")):
        for line in open(f):
            p=line.split()
            if not p or not p[0].isdigit(): continue
            vals.setdefault(int(p[0]),[]).append(float(p[12]))
    return vals
def cell(vals,lo,hi):
    ms=[statistics.median(v) for s,v in vals.items() if lo<=s<=hi]
    mx=max(max(v) for s,v in vals.items() if lo<=s<=hi)
    return f"{min(ms):.2f}-{max(ms):.2f} ({mx:.2f})"
d=sys.argv[1]; modes=sys.argv[2].split(",")
print("| layout, root | path | "+" | ".join(b[0] for b in bands)+" |")
print("|---|---|"+"---:|"*len(bands))
for layout in ["2+2","3+1"]:
    for root in [0,1,3]:
        for m in modes:
            v=med(d,m,root,layout)
            if not v: continue
            print(f"| {layout}, root {root} | {m} | "+" | ".join(cell(v,lo,hi) for _,lo,hi in bands)+" |")
