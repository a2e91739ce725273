// One tensor collective, described once by the front end (collectives.cpp) and carried out by a
// backend (mpi/, nccl/, or cuda/ staging around mpi/). Internal.
#pragma once

#include <cstddef>

#include "mpidist/collectives.hpp"

namespace mpidist::detail {

class Group;

enum class CollectiveKind { AllReduce, Broadcast, AllGather, ReduceScatter, Reduce };

/// A validated call. `count` is the per-rank element count in NCCL's sense: the buffer for
/// all_reduce/broadcast/reduce, `in` for all_gather, `out` (one block) for reduce_scatter.
struct Call {
  CollectiveKind kind;
  const char* name;  // the public function, for error messages
  const void* in;    // == out for in-place calls and broadcast
  void* out;
  std::size_t count;
  DataType dtype;
  ReduceOp op;       // Sum for data-movement collectives
  int root;          // 0 where the collective has no root
  Stream stream;     // user stream or nullptr
  Group* group;      // the communicator: every layer below takes it from here
  int size;          // the group's size (1 inside a MainProcessContext)
  int rank;          // this rank in the group (0 inside a MainProcessContext)
  int device;        // the CUDA device of the buffers, -1 for host memory
};

/// Elements in the input buffer of `call` on this rank.
inline std::size_t in_count(const Call& call) {
  return call.kind == CollectiveKind::ReduceScatter ? call.count * static_cast<std::size_t>(call.size) : call.count;
}
/// Elements in the output buffer of `call` on this rank.
inline std::size_t out_count(const Call& call) {
  return call.kind == CollectiveKind::AllGather ? call.count * static_cast<std::size_t>(call.size) : call.count;
}
/// True for collectives that combine values (and therefore use `op`).
inline bool reduces(CollectiveKind kind) {
  return kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter || kind == CollectiveKind::Reduce;
}
inline bool reduces(const Call& call) { return reduces(call.kind); }
/// True when this rank's output holds a result after the call (reduce writes root's only).
inline bool writes_output(const Call& call) { return call.kind != CollectiveKind::Reduce || call.rank == call.root; }

}  // namespace mpidist::detail
