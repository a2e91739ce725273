// The table of operations (nccl-tests builds one binary per collective; one binary with a
// table is easier to install and to script).
#include "../bench.hpp"

namespace bench {
namespace ops {
extern const OpHooks all_reduce_hooks, broadcast_hooks, all_gather_hooks, reduce_scatter_hooks, reduce_hooks,
    barrier_hooks, object_broadcast_hooks, object_all_gather_hooks, all_reduce_many_hooks, sendrecv_hooks,
    all_to_all_hooks, all_to_all_v_hooks, all_gather_v_hooks, gather_hooks, scatter_hooks;
}  // namespace ops

const std::vector<const OpHooks*>& all_ops() {
  static const std::vector<const OpHooks*> table{
      &ops::all_reduce_hooks, &ops::broadcast_hooks, &ops::all_gather_hooks,
      &ops::reduce_scatter_hooks, &ops::reduce_hooks, &ops::barrier_hooks,
      &ops::object_broadcast_hooks, &ops::object_all_gather_hooks, &ops::all_reduce_many_hooks,
      &ops::sendrecv_hooks, &ops::all_to_all_hooks, &ops::all_to_all_v_hooks, &ops::all_gather_v_hooks,
      &ops::gather_hooks, &ops::scatter_hooks};
  return table;
}

const OpHooks* find_op(std::string_view name) {
  for (const OpHooks* op : all_ops())
    if (op->name == name) return op;
  return nullptr;
}

}  // namespace bench
