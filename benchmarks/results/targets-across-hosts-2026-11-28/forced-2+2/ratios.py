import json,sys,glob,collections
rows=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(sys.argv[1:]):
    d=json.load(open(f)); tag=f.split('/')[-2].rsplit('-',1)[0]
    for r in d["results"]:
        rows[r["bytes"]][tag].append(round(r["ratio"],2))
for b in sorted(rows):
    print(b, {k: v for k,v in rows[b].items()})
