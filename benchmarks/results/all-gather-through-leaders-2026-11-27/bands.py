# The tables of README.md: python3 bands.py FOLDER LAYOUT mpi,shm,... (per-size medians of the runs,
# their range per band, the largest single run in brackets).
import glob, statistics, sys
bands = [("16 B-1 KiB", 16, 1024), ("4-64 KiB", 4096, 65536), ("256 KiB-1 MiB", 262144, 1 << 20), ("4-64 MiB", 4 << 20, 64 << 20)]
folder, layout, modes = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
print("| path | " + " | ".join(b[0] for b in bands) + " |")
print("|---|" + "---:|" * len(bands))
for mode in modes:
    runs = {}
    for f in sorted(glob.glob(f"{folder}/r*-{mode}-all_gather-{layout}.txt")):
        for line in open(f):
            p = line.split()
            if p and p[0].isdigit():
                runs.setdefault(int(p[0]), []).append(float(p[12]))
    cells = []
    for _, lo, hi in bands:
        inside = [v for s, v in runs.items() if lo <= s <= hi]
        meds = [statistics.median(v) for v in inside]
        cells.append(f"{min(meds):.2f}-{max(meds):.2f} ({max(max(v) for v in inside):.2f})")
    print(f"| `{mode}` | " + " | ".join(cells) + " |")
