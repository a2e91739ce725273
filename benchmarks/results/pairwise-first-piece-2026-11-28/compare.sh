#!/bin/bash
# compare.sh OUT ROUNDS NAME=BENCH...: the libraries named (each an mpidist-bench, its lib/ beside
# it) in turn, round by round, all_to_all_v at 2+2 and 3+1 across the two-host harness (both hosts
# on both cores), 4 KiB - 1 MiB; then each cell's mpidist / MPI_Alltoallv per run (ratios.py).
cd "$(git rev-parse --show-toplevel)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
out=$1 rounds=$2
shift 2
rm -rf "$out"; mkdir -p "$out"
for round in $(seq "$rounds"); do
  for lib in "$@"; do
    for lay in 2+2 3+1; do
      MPIDIST_BENCH=${lib#*=} bash tests/hosts/bench_two_hosts.sh $lay "$out/${lib%%=*}-$round" all_to_all_v \
        -b 4K -e 1M -f 4 -n 40 -w 5 > /dev/null 2>&1 || echo "failed: ${lib%%=*} $lay round $round"
    done
  done
done
python3 "$(dirname "$0")/ratios.py" "$out"
