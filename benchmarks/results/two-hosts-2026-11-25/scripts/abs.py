import json,sys,glob,statistics as st
root=sys.argv[1]; vs=sys.argv[2].split(',')
for l in ['1+1','2+2','3+1']:
  for v in vs:
    fs=sorted(glob.glob(f'{root}/{v}/run*/all_reduce-{l}.json'))
    if not fs: continue
    d={}
    for f in fs:
      for r in json.load(open(f))['results']: d.setdefault(r['bytes'],[]).append((r['time_us'],r['raw_time_us']))
    print(l, v, '  '.join(f"{b}B: {st.median([a for a,_ in x]):.1f}/{st.median([m for _,m in x]):.1f} (+{st.median([a-m for a,m in x]):.1f})" for b,x in sorted(d.items())))
