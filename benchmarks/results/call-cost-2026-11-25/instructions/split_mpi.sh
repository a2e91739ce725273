#!/bin/bash
# split_mpi.sh file iters -> total/call, in-MPI/call, outside-MPI/call, MPI calls by name
f=$1; it=$2
callgrind_annotate --inclusive=yes --threshold=100 --show-percs=no "$f" 2>/dev/null | awk -v it=$it '
/PROGRAM TOTALS/ {gsub(",","",$1); tot=$1}
/libmpi\.so|libopen-pal|libmpich/ && /:P?MPI_[A-Za-z_]+[ (\[]/ {
  line=$0; v=$1; gsub(",","",v);
  match(line, /P?MPI_[A-Za-z_]+/); name=substr(line,RSTART,RLENGTH); sub(/^PMPI/,"MPI",name);
  if (!(name in seen)) { seen[name]=1; mpi+=v; names=names sprintf(" %s=%d", name, v/it) }
}
END { printf "total %d  in-MPI %d  outside %d |%s\n", tot/it, mpi/it, (tot-mpi)/it, names }'
