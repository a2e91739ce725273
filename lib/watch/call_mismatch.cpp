// Two ranks' records of the same call, compared.
#include "watch/call_mismatch.hpp"

#include <string_view>

#include "core/context.hpp"
#include "watch/flight_recorder.hpp"

namespace mpidist::detail {

std::string parted_at(const Context& ctx, std::uint64_t key, std::uint64_t seq, int rank_a, const std::string& call_a,
                      int rank_b, const std::string& call_b) {
  return "#" + std::to_string(seq) + " on " + ctx.recorder->comm_name(key) + ": world rank " + std::to_string(rank_a) +
         " called " + call_a + "; world rank " + std::to_string(rank_b) + " called " + call_b;
}

bool receives_from(const EntrySnapshot& call, int to, int from) {
  std::string_view op = call.op;
  if (op.ends_with("_async")) op.remove_suffix(6);  // the recorder's name for a non-blocking call
  if (op == "barrier" || op == "send" || op == "recv" || op == "finalize") return false;
  if (op == "broadcast" || op == "broadcast_object" || op == "compute_and_broadcast" || op == "scatter")
    return to != call.root && from == call.root;
  if (op == "gather" || op == "gather_from_all_ranks" || op == "gather_scalar_from_all_ranks" || op == "reduce")
    return to == call.root && from != to;
  return true;
}

bool completed_wrongly(const EntrySnapshot& completed, int to, const EntrySnapshot& failed, int from) {
  return completed.valid && failed.valid && completed.state == CallState::Completed &&
         failed.state == CallState::Failed && completed.comm_key == failed.comm_key && completed.seq == failed.seq &&
         completed.seq != 0 && completed.hash != failed.hash && describe_call(completed) != describe_call(failed) &&
         receives_from(completed, to, from);
}

std::string wrong_completion_text(const Context& ctx, const EntrySnapshot& completed, int completed_world_rank,
                                  const EntrySnapshot& failed, int failed_world_rank) {
  return parted_at(ctx, completed.comm_key, completed.seq, completed_world_rank,
                   describe_call(completed) + " and returned, so its result is wrong", failed_world_rank,
                   describe_call(failed) + ", which failed there");
}

}  // namespace mpidist::detail
