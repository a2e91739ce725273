#!/bin/bash
# run_all.sh LIBDIR TAG: instructions per call of every case, rank 0 under callgrind (rank 1 runs
# natively), split into what MPI's functions ran and the rest. B=call_cost binary, OUT=output dir.
libdir=$1; tag=$2; here=$(dirname "$0")
export LD_LIBRARY_PATH=$libdir OUT=${OUT:-.}
for c in all_reduce_4B all_reduce_1KiB; do
  for s in mpidist raw; do
    ITERS=10000 $here/callgrind_one.sh $tag-r1 $c $s 1 >/dev/null; echo "$tag 1rank $c $s $($here/split_mpi.sh $OUT/$tag-r1-1r-$c-$s.out 10000)"
    MPIDIST_HOST_ALLREDUCE=mpi $here/callgrind_one.sh $tag-mpi $c $s 2 >/dev/null; echo "$tag 2rank-mpi $c $s $($here/split_mpi.sh $OUT/$tag-mpi-2r-$c-$s.out 5000)"
    MPIDIST_HOST_ALLREDUCE=auto $here/callgrind_one.sh $tag-shm $c $s 2 >/dev/null; echo "$tag 2rank-shm $c $s $($here/split_mpi.sh $OUT/$tag-shm-2r-$c-$s.out 5000)"
  done
done
for s in mpidist raw; do $here/callgrind_one.sh $tag p2p_8B $s 2 >/dev/null; echo "$tag 2rank p2p_8B $s $($here/split_mpi.sh $OUT/$tag-2r-p2p_8B-$s.out 5000)"; done
