#!/bin/bash
# measure_lines.sh: per call, mpidist's own instructions (warm, back-to-back) and its own cache lines
# fetched from memory (cold: 64 MiB touched before each call), rank 0 of 2 under callgrind, the
# MPI path (MPIDIST_HOST_ALLREDUCE=mpi); "own" = the call's total less the MPI function it ends in.
. /tmp/env.sh
export MPIDIST_HOST_ALLREDUCE=mpi
for lib in before after; do
  L=/tmp/aa/before; [ $lib = after ] && L=/work/main/build/lib
  for op in ar a2a; do
    mpi=PMPI_Allreduce; [ $op = a2a ] && mpi=PMPI_Alltoall
    for mode in warm cold; do
      n=100; [ $mode = warm ] && n=2000
      out=/tmp/aa/res/$lib-$op-$mode.out; rm -f $out
      sim=""; [ $mode = cold ] && sim="--cache-sim=yes"
      prog=./cold; [ $mode = warm ] && prog=./coldwarm
      mpiexec -x LD_LIBRARY_PATH=$L -n 2 bash -c "if [ \$OMPI_COMM_WORLD_RANK = 0 ]; then exec valgrind --tool=callgrind $sim --callgrind-out-file=$out --toggle-collect='mpidist::all_*' $prog $op 64 $n; else exec $prog $op 64 $n; fi" >/dev/null 2>&1
      show=Ir,ILmr,DLmr,DLmw; [ $mode = warm ] && show=Ir; callgrind_annotate --inclusive=yes --show=$show $out 2>/dev/null | awk -v n=$n -v mpi=$mpi -v tag="$lib $op $mode" '
        /PROGRAM TOTALS/ {gsub(",","");ti=$1; til=$3; tdl=$5; tdw=$7; if (til=="") til=0}
        $0 ~ ("\\?\\?\\?:" mpi " ") {gsub(",",""); mi=$1; mil=$3; mdl=$5; mdw=$7}
        END { if ($0=="") ; printf "%-22s own instructions/call %6.0f", tag, (ti-mi)/n; if (til!="" && tdl!="") printf "  own memory lines/call %5.1f (code %5.1f, data %5.1f)", ((til-mil)+(tdl-mdl)+(tdw-mdw))/n, (til-mil)/n, ((tdl-mdl)+(tdw-mdw))/n; printf "\n" }'
    done
  done
done
