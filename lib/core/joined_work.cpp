// Work made of started parts and a last step (joined_work.hpp).
#include "core/joined_work.hpp"

#include <memory>
#include <utility>

namespace mpidist::detail {
namespace {

class JoinedWork final : public WorkState {
 public:
  JoinedWork(std::string communicator, std::string operation, std::vector<Work> parts, std::function<void()> then)
      : WorkState(std::move(communicator), std::move(operation)), parts_(std::move(parts)), then_(std::move(then)) {}

  bool poll() override {
    for (Work& part : parts_)
      if (!part.test()) return false;
    finish();
    return true;
  }
  void complete() override { finish(); }

 private:
  // Every part is waited for, also after one failed (wait_all), before `then` may read their output.
  void finish() {
    wait_all(parts_);
    if (then_) std::exchange(then_, nullptr)();
  }

  std::vector<Work> parts_;
  std::function<void()> then_;
};

}  // namespace

Work joined_work(std::string communicator, std::string operation, std::vector<Work> parts, std::function<void()> then) {
  return Work(std::make_unique<JoinedWork>(std::move(communicator), std::move(operation), std::move(parts), std::move(then)));
}

}  // namespace mpidist::detail
