// Work: driving a WorkState to its end, keeping its Error for every later wait().
#include "mpidist/work.hpp"

#include <thread>
#include <utility>

#include "mpidist/error.hpp"
#include "mpidist/log.hpp"

namespace mpidist {
namespace detail {

WorkState::WorkState(std::string communicator, std::string operation)
    : communicator_(std::move(communicator)), operation_(std::move(operation)) {}

WorkState::~WorkState() = default;

}  // namespace detail

Work& Work::operator=(Work&& other) noexcept {
  if (this != &other) {
    finish_quietly();
    state_ = std::move(other.state_);
    error_ = std::move(other.error_);
    received_ = other.received_;
  }
  return *this;
}

Work::~Work() { finish_quietly(); }

void Work::wait() {
  if (state_ != nullptr) {
    // Whatever happens, the state is done with: it is released here, and only the Error is kept.
    auto state = std::move(state_);
    try {
      state->complete();
      received_ = state->received();
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  if (error_) std::rethrow_exception(error_);
}

bool Work::test() {
  if (state_ == nullptr) return true;
  try {
    if (!state_->poll()) return false;
    received_ = state_->received();
  } catch (...) {
    error_ = std::current_exception();
  }
  state_.reset();
  return true;
}

bool Work::wait_for(std::chrono::duration<double> timeout) {
  // Polls (each test() advances the operation) while the time lasts: at first only giving the core
  // away, then sleeping a little, so a long wait does not spin.
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0; !test(); ++polls) {
    if (std::chrono::steady_clock::now() - start >= timeout) return false;
    if (polls < 1000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  wait();
  return true;
}

Status Work::status() const {
  if (state_ != nullptr)
    throw Error(state_->communicator(), state_->operation(),
                "status() of a Work that is still running: wait() for it (or a test() that returned true) first");
  if (error_) std::rethrow_exception(error_);
  if (!received_)
    throw Error("Work::status", "this Work received no message of its own: only an irecv's Work says where its "
                                "message came from (an isend's, a batch_isend_irecv's and a collective's do not)");
  return *received_;
}

void Work::finish_quietly() noexcept {
  if (state_ == nullptr) return;
  const std::string what = state_->operation() + " on " + state_->communicator();
  try {
    wait();
  } catch (const std::exception& e) {
    try {
      Logger("mpidist", true).error("an unwaited ", what, " failed as its Work was destroyed: ", e.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

void wait_all(std::span<Work> works) {
  // Every operation's MPI requests are posted when it starts, so MPI advances them all while
  // this waits for one: waiting in order cannot deadlock a ring.
  std::exception_ptr first;
  for (auto& work : works) {
    try {
      work.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace mpidist
