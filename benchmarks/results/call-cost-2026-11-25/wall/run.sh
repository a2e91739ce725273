#!/bin/bash
# run.sh OUTDIR ROUNDS (BEFORE_LIB, AFTER_LIB: directories holding each libmpidist.so.0): call_cost, the library before and after, alternating, JSON per run
out=$1; rounds=${2:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
B=${B:-build/benchmarks/call_cost}
mkdir -p $out
for r in $(seq 1 $rounds); do
  for lib in before after; do
    [ $lib = before ] && L=$BEFORE_LIB || L=$AFTER_LIB
    LD_LIBRARY_PATH=$L timeout 120 mpiexec -x LD_LIBRARY_PATH -n 1 $B --iters 20000 --reps 11 --json > $out/$lib-1rank-run$r.json
    LD_LIBRARY_PATH=$L timeout 120 mpiexec -x LD_LIBRARY_PATH -n 2 $B --iters 20000 --reps 11 --json > $out/$lib-2rank-shm-run$r.json
    MPIDIST_HOST_ALLREDUCE=mpi LD_LIBRARY_PATH=$L timeout 120 mpiexec -x LD_LIBRARY_PATH -x MPIDIST_HOST_ALLREDUCE -n 2 $B --iters 20000 --reps 11 --json > $out/$lib-2rank-mpi-run$r.json
  done
done
