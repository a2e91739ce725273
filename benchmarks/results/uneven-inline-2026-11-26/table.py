import json, glob, statistics, sys, collections
np = sys.argv[1]
import os
W = os.path.join(os.path.dirname(os.path.abspath(__file__)), "json")
ops = ['all_to_all', 'all_to_all_v', 'all_gather_v', 'gather', 'scatter']
rat = collections.defaultdict(list); times = collections.defaultdict(list)
for f in glob.glob(f'{W}/*-np{np}-r*.json'):
    name = f.split('/')[-1]
    side = name.split('-')[0]; op = name[len(side)+1:].split('-np')[0]
    try: d = json.load(open(f))
    except Exception as e: print('bad', f, e); continue
    for r in d['results']:
        rat[(op, r['bytes'], side)].append(r['ratio'])
        times[(op, r['bytes'], side)].append((r['time_us'], r['raw_time_us']))
sizes = sorted({k[1] for k in rat})
print(f'| size | ' + ' | '.join(f'{o} before | {o} after' for o in ops) + ' |')
print('|---:|' + '---:|' * (2 * len(ops)))
for b in sizes:
    row = [f'{b} B']
    for o in ops:
        for side in ('before', 'after'):
            v = rat.get((o, b, side))
            row.append(f'{statistics.median(v):.2f}' if v else '-')
    print('| ' + ' | '.join(row) + ' |')
print()
print('median µs mpidist/MPI, after:')
for b in sizes:
    print(b, ' '.join(f'{o}:{statistics.median([t[0] for t in times[(o,b,"after")]]):.2f}/{statistics.median([t[1] for t in times[(o,b,"after")]]):.2f}' for o in ops if times.get((o,b,'after'))))
