// The Works of the non-blocking collectives: one that waits for a lane's job, one already over.
#include "core/async_lane.hpp"

namespace mpidist::detail {

bool LaneWork::poll() {
  if (!job_->done.load(std::memory_order_acquire)) return false;
  if (job_->error) std::rethrow_exception(job_->error);
  return true;
}

void LaneWork::complete() {
  lane_->await(*job_);
  poll();
}

Work finished_work(const std::string& communicator, const char* operation, std::exception_ptr error) {
  if (!error) return Work();
  return Work(std::make_unique<DoneWork>(communicator, operation, std::move(error)));
}

}  // namespace mpidist::detail
