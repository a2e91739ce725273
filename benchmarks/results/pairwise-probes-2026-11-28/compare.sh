#!/bin/bash
# compare.sh OUT ROUNDS: the library before (OLD_BENCH: its mpidist-bench, its lib/ beside it) and
# this tree's build/ in turn, all_to_all_v at 2+2 and 3+1 across the two-host harness (both hosts
# on both cores), 4-256 KiB; prints each cell's mpidist / MPI_Alltoallv per run.
cd "$(git rev-parse --show-toplevel)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$1"; mkdir -p "$1"
for round in $(seq $2); do for lib in old new; do B=${OLD_BENCH:?the mpidist-bench of the library before}; [ $lib = new ] && B=build/benchmarks/mpidist-bench; for lay in 2+2 3+1; do MPIDIST_BENCH=$B bash tests/hosts/bench_two_hosts.sh $lay "$1/$lib-$round" all_to_all_v -b 4K -e 256K -f 4 -n 40 -w 5 > /dev/null 2>&1 || echo fail $lib $lay; done; done; done
python3 "$(dirname "$0")/ratios.py" "$1"
