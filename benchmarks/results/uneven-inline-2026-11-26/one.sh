#!/bin/bash
# one.sh LIBDIR tag case -> own instructions per call on rank 0 (callgrind), rank 1 native
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
lib=$1; tag=$2; c=$3; it=${ITERS:-5000}; W=/tmp/smallx-work
B=/work/wt-smallx/build/benchmarks/call_cost
out=$W/cg/$tag-$c.out
LD_LIBRARY_PATH=$lib timeout 300 nice mpiexec -x LD_LIBRARY_PATH -n 1 valgrind --tool=callgrind --callgrind-out-file=$out --collect-atstart=no --toggle-collect="*run_mpidist*" $B --only $c --side mpidist --iters $it : -n 1 $B --only $c --side mpidist --iters $it >$W/cg/log.$tag.$c 2>&1
callgrind_annotate --inclusive=yes --threshold=100 --show-percs=no "$out" 2>/dev/null | awk -v it=$it -v tag=$tag -v c=$c '
/PROGRAM TOTALS/ {gsub(",","",$1); tot=$1}
/libmpi\.so|libopen-pal|libmpich/ && /:P?MPI_[A-Za-z_]+[ (\[]/ {
  line=$0; v=$1; gsub(",","",v);
  match(line, /P?MPI_[A-Za-z_]+/); name=substr(line,RSTART,RLENGTH); sub(/^PMPI/,"MPI",name);
  if (!(name in seen)) { seen[name]=1; mpi+=v; names=names sprintf(" %s=%d", name, v/it) }
}
/Segment::wait\(/ { v=$1; gsub(",","",v); if (!w) w=v }
END { printf "%s %s total %d  in-MPI %d  own %d  own-minus-shm-wait %d\n", tag, c, tot/it, mpi/it, (tot-mpi)/it, (tot-mpi-w)/it }'
