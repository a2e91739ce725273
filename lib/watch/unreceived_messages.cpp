// finalize()'s report of messages nobody received (unreceived_messages.hpp).
#include "watch/unreceived_messages.hpp"

#include <mpi.h>

#include <cstdio>
#include <string>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/rank_prefix.hpp"
#include "mpi/p2p_messages.hpp"

namespace mpidist::detail {
namespace {

void report_group(Group& group) {
  if (group.released()) return;
  for (;;) {
    int found = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, group.comm, &found, &message, &status) != MPI_SUCCESS || !found) return;
    const std::string what = mpi::describe_unreceived(message, status);
    std::fprintf(stderr, "mpidist: %sfinalize: %s on '%s' was never received\n", rank_prefix().c_str(), what.c_str(),
                 group.name.c_str());
  }
}

}  // namespace

void report_unreceived_messages(Context& ctx) noexcept {
  try {
    if (ctx.world) report_group(*ctx.world);
    for (auto& weak : ctx.groups)
      if (auto group = weak.lock()) report_group(*group);
  } catch (...) {
    // A report only: finalize goes on.
  }
}

}  // namespace mpidist::detail
