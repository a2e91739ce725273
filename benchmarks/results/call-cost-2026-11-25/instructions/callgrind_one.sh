#!/bin/bash
# usage: callgrind_one.sh tag case side  -> instructions per call on rank 0 (rank 1 native)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
B=${B:-build/benchmarks/call_cost}
tag=$1; c=$2; side=$3; n=${4:-2}; it=${ITERS:-5000}
out=${OUT:-.}/$tag-${n}r-$c-$side.out
if [ "$n" = 1 ]; then
  timeout 300 nice valgrind --tool=callgrind --callgrind-out-file=$out --collect-atstart=no --toggle-collect="*run_${side}*" $B --only $c --side $side --iters $it >${OUT:-.}/log.$$ 2>&1
else
  timeout 300 nice mpiexec -x MPIDIST_HOST_ALLREDUCE -n 1 valgrind --tool=callgrind --callgrind-out-file=$out --collect-atstart=no --toggle-collect="*run_${side}*" $B --only $c --side $side --iters $it : -n 1 $B --only $c --side $side --iters $it >${OUT:-.}/log.$$ 2>&1
fi
ir=$(grep -o "Collected : [0-9]*" ${OUT:-.}/log.$$ | awk '{print $3}')
echo "$tag ${n}r $c $side $(( ir / it ))"
