// The list forms of torch: all_gather into a list of tensors, one per rank (all_gather(tensor_list,
// tensor)), reduce_scatter from one (reduce_scatter(output, input_list)), all_to_all between two
// (all_to_all(output_tensor_list, input_tensor_list)), gather into and scatter from one on root
// (gather_list, scatter_list), on top of the contiguous collectives: straight from or into the
// lists when their tensors lie one after the other, else through host buffers (host memory), or one
// rooted call per rank (all_gather's and reduce_scatter's device lists, where a contiguous buffer
// would be device memory mpidist does not allocate; the others' device lists go through host).
// Their non-blocking forms start the same collectives and copy out of the host buffers when waited.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/async_lane.hpp"
#include "core/device_backend.hpp"
#include "core/group.hpp"
#include "core/joined_work.hpp"
#include "tensors/issue.hpp"
#include "mpidist/async_collectives.hpp"
#include "mpidist/collectives.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"
#include "mpidist/objects.hpp"

namespace mpidist {
namespace {

// Where `list` starts when each of its tensors lies right after the one before it, whatever their
// sizes (empty ones anywhere); null otherwise.
template <class View>
const std::byte* packed(std::span<const View> list) {
  const std::byte* base = nullptr;
  std::size_t offset = 0;
  for (const View& tensor : list) {
    if (tensor.count() == 0) continue;
    const auto* at = static_cast<const std::byte*>(tensor.data());
    if (base == nullptr) base = at;  // the first that holds elements: nothing before it
    else if (at != base + offset) return nullptr;
    offset += tensor.bytes();
  }
  return base;
}

// Whether a list lies one after the other, as one buffer would (a list of empty tensors does).
template <class View>
bool one_after_another(std::span<const View> list) {
  return packed(list) != nullptr || std::ranges::all_of(list, [](const View& tensor) { return tensor.count() == 0; });
}

// The group the call runs on: inside a MainProcessContext, this rank alone (as every collective).
int ranks(const Communicator& comm) { return MainProcessContext::depth() > 0 ? 1 : comm.size(); }
int this_rank(const Communicator& comm) { return MainProcessContext::depth() > 0 ? 0 : comm.rank(); }

// Whether `layout()` holds on every rank, once every rank's lists passed `check()`: one small
// reduction, which a layout that picks the collective needs anyway (below). Where some rank's lists
// fail, their problems are gathered (a second step, only then) and every rank raises the same Error,
// where failing alone would leave the others waiting in the reduction until the timeout.
template <class Check, class Layout>
bool checked_everywhere(const Communicator& comm, const char* operation, Check&& check, Layout&& layout) {
  std::string problem;
  bool mine = false;
  try {
    check();
    mine = layout();
  } catch (const Error& error) {
    problem = error.detail();
  }
  const int verdict = all_reduce(comm, problem.empty() ? (mine ? 2 : 1) : 0, ReduceOp::Min);
  if (verdict > 0) return verdict == 2;
  const std::vector<std::string> problems = all_gather(comm, problem);
  if (!problem.empty()) throw Error(comm.name(), operation, problem);
  std::size_t first = 0;
  while (first + 1 < problems.size() && problems[first].empty()) ++first;
  throw Error(comm.name(), operation, "rank " + std::to_string(first) + "'s lists: " + problems[first]);
}

// One tensor per rank, each of `single`'s count, type and memory (`role`: "input", "output").
template <class View>
void check_list(const Communicator& comm, const char* operation, const BufferView& single, const char* role,
                std::span<const View> list) {
  if (list.size() != static_cast<std::size_t>(ranks(comm)))
    throw Error(comm.name(), operation, "the list holds " + std::to_string(list.size()) + " tensors but the group has " +
                                            std::to_string(ranks(comm)) + " ranks: it takes one per rank" +
                                            (MainProcessContext::depth() > 0 ? " (one in a MainProcessContext)" : ""));
  for (std::size_t r = 0; r < list.size(); ++r) {
    if (list[r].count() != single.count() || list[r].dtype() != single.dtype())
      throw Error(comm.name(), operation, "tensor " + std::to_string(r) + " of the list holds " + std::to_string(list[r].count()) +
                                              " " + std::string(to_string(list[r].dtype())) + " elements where the " + role +
                                              " holds " + std::to_string(single.count()) + " " +
                                              std::string(to_string(single.dtype())));
    if (list[r].memory() != single.memory())
      throw Error(comm.name(), operation, "tensor " + std::to_string(r) + " of the list is in " +
                                              (list[r].memory() == MemoryKind::Device ? "device" : "host") + " memory and the " +
                                              role + " is not: all of them live in one kind of memory");
  }
}

// The collectives of one list form and the copies after them: run now (the blocking forms), or
// started, the copies then run by the Work once every collective is done, on the thread that waits
// (the non-blocking forms). The host buffers live until then.
class Steps {
 public:
  explicit Steps(bool started) : started_(started) {}
  bool started() const { return started_; }

  std::byte* host_buffer(std::size_t bytes) {
    buffers_.push_back(std::make_shared<std::vector<std::byte>>(bytes));
    return buffers_.back()->data();
  }
  void add(Work work) { parts_.push_back(std::move(work)); }
  void then(std::function<void()> copy) {
    if (started_) copies_.push_back(std::move(copy));
    else copy();
  }
  Work work(const Communicator& comm, const char* operation) && {
    return detail::joined_work(comm.name(), operation, std::move(parts_),
                               [copies = std::move(copies_), buffers = std::move(buffers_)] {
                                 for (const auto& copy : copies) copy();
                               });
  }

 private:
  bool started_;
  std::vector<Work> parts_;
  std::vector<std::function<void()>> copies_;
  std::vector<std::shared_ptr<std::vector<std::byte>>> buffers_;
};

// Each collective a list form uses, run or started as its steps are.
void all_gather_step(Steps& s, const Communicator& c, const InputView& in, const BufferView& out, Stream stream) {
  if (s.started()) s.add(all_gather_async(c, in, out, stream));
  else all_gather(c, in, out, stream);
}
void broadcast_step(Steps& s, const Communicator& c, const BufferView& buffer, int root, Stream stream) {
  if (s.started()) s.add(broadcast_async(c, buffer, root, stream));
  else broadcast(c, buffer, root, stream);
}
void reduce_scatter_step(Steps& s, const Communicator& c, const InputView& in, const BufferView& out, ReduceOp op,
                         Stream stream) {
  if (s.started()) s.add(reduce_scatter_async(c, in, out, op, stream));
  else reduce_scatter(c, in, out, op, stream);
}
void reduce_step(Steps& s, const Communicator& c, const InputView& in, const BufferView& out, ReduceOp op, int root,
                 Stream stream) {
  if (s.started()) s.add(reduce_async(c, in, out, op, root, stream));
  else reduce(c, in, out, op, root, stream);
}
void all_to_all_step(Steps& s, const Communicator& c, const InputView& in, Counts send, const BufferView& out,
                     Counts recv, Stream stream) {
  if (s.started()) s.add(all_to_all_async(c, in, send, out, recv, stream));
  else all_to_all(c, in, send, out, recv, stream);
}
void gather_step(Steps& s, const Communicator& c, const InputView& in, const BufferView& out, int root, Stream stream) {
  if (s.started()) s.add(gather_async(c, in, out, root, stream));
  else gather(c, in, out, root, stream);
}
void scatter_step(Steps& s, const Communicator& c, const InputView& in, const BufferView& out, int root, Stream stream) {
  if (s.started()) s.add(scatter_async(c, in, out, root, stream));
  else scatter(c, in, out, root, stream);
}

// How all_gather and reduce_scatter move a list, once it is checked: as one buffer when it lies
// one after the other, else through a host buffer (host memory) or one rooted call per rank. A host
// list's layout picks only where the data is copied, before the same collective: each rank alone.
// A device list's picks the collective (one over the whole list, or one per rank), and separately
// allocated tensors may lie one after the other on some ranks only: the ranks agree.
// A host list that fails its checks fails as the collective of that shape would (`contiguous`): in
// the ranks' agreement where they check calls together (MPIDIST_VALIDATE=1), so that every rank raises it.
enum class ListPath { Direct, HostBuffer, PerRank };
template <class View, class Contiguous>
ListPath list_path(const Communicator& comm, const char* operation, const BufferView& single, const char* role,
                   std::span<const View> list, Contiguous&& contiguous) {
  if (single.memory() == MemoryKind::Host) {
    if (const auto local = detail::capture([&] { check_list(comm, operation, single, role, list); })) contiguous(local);
    return one_after_another(list) ? ListPath::Direct : ListPath::HostBuffer;
  }
  const bool adjacent = checked_everywhere(
      comm, operation, [&] { check_list(comm, operation, single, role, list); }, [&] { return one_after_another(list); });
  return adjacent ? ListPath::Direct : ListPath::PerRank;
}

void all_gather_into_list(Steps& s, const Communicator& comm, const InputView& in, std::span<const BufferView> outs,
                          Stream stream) {
  constexpr const char* operation = "all_gather";
  const ListPath path = list_path(comm, operation, in, "input", outs, [&](std::exception_ptr local) {
    // The shape of the call the others make; its memory is never touched (at in's, which is not null).
    const BufferView whole(const_cast<void*>(in.data()), static_cast<std::size_t>(ranks(comm)) * in.count(), in.dtype());
    detail::failed_collective(detail::group_of(comm, operation), detail::CollectiveKind::AllGather, operation, in, whole,
                              ReduceOp::Sum, 0, stream, s.started(), local);
  });
  const std::size_t bytes = in.bytes();
  const std::size_t count = outs.size() * in.count();
  switch (path) {
    case ListPath::Direct: return all_gather_step(s, comm, in, BufferView(outs[0].data(), count, in.dtype()), stream);
    case ListPath::HostBuffer: {
      std::byte* all = s.host_buffer(outs.size() * bytes);
      all_gather_step(s, comm, in, BufferView(all, count, in.dtype()), stream);
      return s.then([all, bytes, outs = std::vector<BufferView>(outs.begin(), outs.end())] {
        for (std::size_t r = 0; r < outs.size(); ++r)
          if (bytes > 0) std::memcpy(outs[r].data(), all + r * bytes, bytes);
      });
    }
    case ListPath::PerRank: {
      const BufferView& mine = outs[static_cast<std::size_t>(this_rank(comm))];
      if (mine.data() != in.data() && bytes > 0)
        detail::copy_device_memory(operation, mine.data(), in.data(), bytes, mine.device(), stream);
      for (int r = 0; r < ranks(comm); ++r) broadcast_step(s, comm, outs[static_cast<std::size_t>(r)], r, stream);
      return;
    }
  }
}

void reduce_scatter_from_list(Steps& s, const Communicator& comm, std::span<const InputView> ins,
                              const BufferView& out, ReduceOp op, Stream stream) {
  constexpr const char* operation = "reduce_scatter";
  const ListPath path = list_path(comm, operation, out, "output", ins, [&](std::exception_ptr local) {
    const InputView whole(out.data(), static_cast<std::size_t>(ranks(comm)) * out.count(), out.dtype());
    detail::failed_collective(detail::group_of(comm, operation), detail::CollectiveKind::ReduceScatter, operation, whole,
                              out, op, 0, stream, s.started(), local);
  });
  const std::size_t bytes = out.bytes();
  const std::size_t count = ins.size() * out.count();
  switch (path) {
    case ListPath::Direct:
      return reduce_scatter_step(s, comm, InputView(ins[0].data(), count, out.dtype()), out, op, stream);
    case ListPath::HostBuffer: {
      std::byte* all = s.host_buffer(ins.size() * bytes);
      for (std::size_t r = 0; r < ins.size(); ++r)
        if (bytes > 0) std::memcpy(all + r * bytes, ins[r].data(), bytes);
      return reduce_scatter_step(s, comm, InputView(all, count, out.dtype()), out, op, stream);
    }
    case ListPath::PerRank:  // rank r's result is the reduction of every rank's ins[r], at r; `out` is written at r only
      for (int r = 0; r < ranks(comm); ++r) reduce_step(s, comm, ins[static_cast<std::size_t>(r)], out, op, r, stream);
      return;
  }
}

// Moves `bytes` between host memory and a tensor of the list (a copy, or a device copy waited for:
// the host buffer it reads or fills is gone when the call returns).
void copy_between(const char* operation, void* to, const void* from, std::size_t bytes, int device, Stream stream) {
  if (bytes == 0) return;
  if (device < 0) return static_cast<void>(std::memcpy(to, from, bytes));
  detail::copy_device_memory(operation, to, from, bytes, device, stream);
  detail::synchronize_stream(operation, stream, device);
}

// all_to_all's lists on this rank: one tensor per rank in each, one element type, one memory for
// every tensor that holds elements (an empty one may be a host view whatever the others are).
void check_exchange_lists(const Communicator& comm, std::span<const InputView> ins, std::span<const BufferView> outs) {
  constexpr const char* operation = "all_to_all";
  const auto n = static_cast<std::size_t>(ranks(comm));
  for (const auto& [list, role] : {std::pair{ins.size(), "ins"}, std::pair{outs.size(), "outs"}})
    if (list != n)
      throw Error(comm.name(), operation, std::string(role) + " holds " + std::to_string(list) + " tensors but the group has " +
                                              std::to_string(n) + " ranks: it takes one per rank" +
                                              (MainProcessContext::depth() > 0 ? " (one in a MainProcessContext)" : ""));
  const DataType dtype = ins[0].dtype();
  const BufferView* first = nullptr;
  for (const BufferView& tensor : ins)
    if (first == nullptr && tensor.count() > 0) first = &tensor;
  for (const BufferView& tensor : outs)
    if (first == nullptr && tensor.count() > 0) first = &tensor;
  const auto where = [](const BufferView& tensor) {
    return tensor.device() < 0 ? std::string("host memory") : "cuda:" + std::to_string(tensor.device());
  };
  const auto check = [&](const BufferView& tensor, const char* role, std::size_t r) {
    if (tensor.dtype() != dtype)
      throw Error(comm.name(), operation, std::string(role) + "[" + std::to_string(r) + "] holds " +
                                              std::string(to_string(tensor.dtype())) + " elements where ins[0] holds " +
                                              std::string(to_string(dtype)) + ": both lists hold one element type");
    if (tensor.count() > 0 && tensor.device() != first->device())
      throw Error(comm.name(), operation, std::string(role) + "[" + std::to_string(r) + "] is in " + where(tensor) +
                                              " and another tensor of the lists in " + where(*first) +
                                              ": all of them live in one memory");
  };
  for (std::size_t r = 0; r < n; ++r) {
    check(ins[r], "ins", r);
    check(outs[r], "outs", r);
  }
}

void all_to_all_lists(Steps& s, const Communicator& comm, std::span<const InputView> ins,
                      std::span<const BufferView> outs, Stream stream) {
  constexpr const char* operation = "all_to_all";
  // Agreed on every rank, whatever its memory: device lists staged on some ranks only would meet
  // device lists elsewhere in one call, and a rank that moves nothing cannot tell which it holds.
  const bool direct = checked_everywhere(
      comm, operation, [&] { check_exchange_lists(comm, ins, outs); },
      [&] { return one_after_another(ins) && one_after_another(outs); });
  const auto n = ins.size();
  const DataType dtype = ins[0].dtype();
  std::vector<std::size_t> send(n), recv(n);
  std::size_t send_total = 0, recv_total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    send_total += send[r] = ins[r].count();
    recv_total += recv[r] = outs[r].count();
  }
  if (direct)
    return all_to_all_step(s, comm, InputView(const_cast<std::byte*>(packed(ins)), send_total, dtype), send,
                           BufferView(const_cast<std::byte*>(packed(outs)), recv_total, dtype), recv, stream);
  // Through host memory: one buffer each way, the uneven all_to_all between them.
  const std::size_t element = size_of(dtype);
  std::byte* sent = s.host_buffer(send_total * element);
  std::byte* received = s.host_buffer(recv_total * element);
  for (std::size_t r = 0, at = 0; r < n; at += ins[r].bytes(), ++r)
    copy_between(operation, sent + at, ins[r].data(), ins[r].bytes(), ins[r].device(), stream);
  all_to_all_step(s, comm, InputView(sent, send_total, dtype), send, BufferView(received, recv_total, dtype), recv,
                  nullptr);
  s.then([received, stream, outs = std::vector<BufferView>(outs.begin(), outs.end())] {
    for (std::size_t r = 0, at = 0; r < outs.size(); at += outs[r].bytes(), ++r)
      copy_between(operation, outs[r].data(), received + at, outs[r].bytes(), outs[r].device(), stream);
  });
}

// Root's list, checked on root and its verdict sent to every rank (one small broadcast): a bad list
// is the same Error everywhere, where root failing alone would leave the others waiting in the
// collective until the communicator's timeout.
template <class View>
void check_root_list(const Communicator& comm, const char* operation, const BufferView& single, const char* role,
                     std::span<const View> list, int root) {
  std::string problem;
  if (this_rank(comm) == root) {
    try {
      check_list(comm, operation, single, role, list);
    } catch (const Error& error) {
      problem = error.detail();
    }
  }
  problem = broadcast(comm, problem, root);
  if (!problem.empty())
    throw Error(comm.name(), operation, this_rank(comm) == root ? problem : "root " + std::to_string(root) + "'s list: " + problem);
}

// What both rooted list forms know once root's list is checked.
struct Rooted {
  bool at_root;
  std::size_t ranks;
  std::size_t bytes;  // of the one tensor of every rank
  DataType dtype;
};
template <class View>
Rooted rooted(const Communicator& comm, const char* operation, const BufferView& single, const char* role,
              std::span<const View> list, int root) {
  check_root_list(comm, operation, single, role, list, root);
  return {this_rank(comm) == root, static_cast<std::size_t>(ranks(comm)), single.bytes(), single.dtype()};
}

// Root's list: direct when it lies one after the other, else through one host buffer. Device
// memory goes through host memory on every rank, root's list or not: the others cannot know
// root's layout, and every rank must take the path root takes.
void gather_into_list(Steps& s, const Communicator& comm, const InputView& in, std::span<const BufferView> outs,
                      int root, Stream stream) {
  constexpr const char* operation = "gather";
  const auto [at_root, n, bytes, dtype] = rooted(comm, operation, in, "input", outs, root);
  const bool host = in.memory() == MemoryKind::Host;
  if (host && !at_root) return gather_step(s, comm, in, BufferView(nullptr, 0, dtype), root, stream);
  if (host && one_after_another(outs))
    return gather_step(s, comm, in, BufferView(outs[0].data(), n * in.count(), dtype), root, stream);
  std::byte* mine = host ? nullptr : s.host_buffer(bytes);
  std::byte* all = s.host_buffer(at_root ? n * bytes : 0);
  if (!host) copy_between(operation, mine, in.data(), bytes, in.device(), stream);
  gather_step(s, comm, host ? in : InputView(mine, in.count(), dtype), BufferView(all, at_root ? n * in.count() : 0, dtype),
              root, nullptr);
  if (at_root)
    s.then([all, size = bytes, stream, outs = std::vector<BufferView>(outs.begin(), outs.end())] {
      for (std::size_t r = 0; r < outs.size(); ++r)
        copy_between(operation, outs[r].data(), all + r * size, size, outs[r].device(), stream);
    });
}

// The mirror of gather_into_list: root's list one after the other goes as it is.
void scatter_from_list(Steps& s, const Communicator& comm, std::span<const InputView> ins, const BufferView& out,
                       int root, Stream stream) {
  constexpr const char* operation = "scatter";
  const auto [at_root, n, bytes, dtype] = rooted(comm, operation, out, "output", ins, root);
  const bool host = out.memory() == MemoryKind::Host;
  if (host && !at_root) return scatter_step(s, comm, InputView(nullptr, 0, dtype), out, root, stream);
  if (host && one_after_another(ins))
    return scatter_step(s, comm, InputView(ins[0].data(), n * out.count(), dtype), out, root, stream);
  std::byte* all = s.host_buffer(at_root ? n * bytes : 0);
  std::byte* mine = host ? nullptr : s.host_buffer(bytes);
  if (at_root)
    for (std::size_t r = 0; r < n; ++r) copy_between(operation, all + r * bytes, ins[r].data(), bytes, ins[r].device(), stream);
  scatter_step(s, comm, InputView(all, at_root ? n * out.count() : 0, dtype), host ? out : BufferView(mine, out.count(), dtype),
               root, nullptr);
  if (!host)
    s.then([mine, size = bytes, stream, out] { copy_between(operation, out.data(), mine, size, out.device(), stream); });
}

// A list form run now (`blocking`), or started: its Error (at issue) in the Work, as the other
// non-blocking calls' (async_collectives.hpp).
template <class Form>
void now(Form&& form) {
  Steps steps(false);
  form(steps);
}
template <class Form>
Work started(const Communicator& comm, const char* operation, Form&& form) {
  Steps steps(true);
  try {
    form(steps);
  } catch (...) {
    return detail::finished_work(comm ? comm.name() : std::string("a null Communicator"), operation,
                                 std::current_exception());
  }
  return std::move(steps).work(comm, operation);
}

}  // namespace

void all_gather(InputView in, std::span<const BufferView> outs, Stream stream) { all_gather(world(), in, outs, stream); }
void all_gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, Stream stream) {
  now([&](Steps& s) { all_gather_into_list(s, comm, in, outs, stream); });
}
Work all_gather_async(InputView in, std::span<const BufferView> outs, Stream stream) {
  return all_gather_async(world(), in, outs, stream);
}
Work all_gather_async(const Communicator& comm, InputView in, std::span<const BufferView> outs, Stream stream) {
  return started(comm, "all_gather", [&](Steps& s) { all_gather_into_list(s, comm, in, outs, stream); });
}

void reduce_scatter(std::span<const InputView> ins, BufferView out, ReduceOp op, Stream stream) {
  reduce_scatter(world(), ins, out, op, stream);
}
void reduce_scatter(const Communicator& comm, std::span<const InputView> ins, BufferView out, ReduceOp op, Stream stream) {
  now([&](Steps& s) { reduce_scatter_from_list(s, comm, ins, out, op, stream); });
}
Work reduce_scatter_async(std::span<const InputView> ins, BufferView out, ReduceOp op, Stream stream) {
  return reduce_scatter_async(world(), ins, out, op, stream);
}
Work reduce_scatter_async(const Communicator& comm, std::span<const InputView> ins, BufferView out, ReduceOp op,
                          Stream stream) {
  return started(comm, "reduce_scatter", [&](Steps& s) { reduce_scatter_from_list(s, comm, ins, out, op, stream); });
}

void all_to_all(std::span<const InputView> ins, std::span<const BufferView> outs, Stream stream) {
  all_to_all(world(), ins, outs, stream);
}
void all_to_all(const Communicator& comm, std::span<const InputView> ins, std::span<const BufferView> outs, Stream stream) {
  now([&](Steps& s) { all_to_all_lists(s, comm, ins, outs, stream); });
}
Work all_to_all_async(std::span<const InputView> ins, std::span<const BufferView> outs, Stream stream) {
  return all_to_all_async(world(), ins, outs, stream);
}
Work all_to_all_async(const Communicator& comm, std::span<const InputView> ins, std::span<const BufferView> outs,
                      Stream stream) {
  return started(comm, "all_to_all", [&](Steps& s) { all_to_all_lists(s, comm, ins, outs, stream); });
}

void gather(InputView in, std::span<const BufferView> outs, int root, Stream stream) { gather(world(), in, outs, root, stream); }
void gather(const Communicator& comm, InputView in, std::span<const BufferView> outs, int root, Stream stream) {
  now([&](Steps& s) { gather_into_list(s, comm, in, outs, root, stream); });
}
Work gather_async(InputView in, std::span<const BufferView> outs, int root, Stream stream) {
  return gather_async(world(), in, outs, root, stream);
}
Work gather_async(const Communicator& comm, InputView in, std::span<const BufferView> outs, int root, Stream stream) {
  return started(comm, "gather", [&](Steps& s) { gather_into_list(s, comm, in, outs, root, stream); });
}

void scatter(std::span<const InputView> ins, BufferView out, int root, Stream stream) { scatter(world(), ins, out, root, stream); }
void scatter(const Communicator& comm, std::span<const InputView> ins, BufferView out, int root, Stream stream) {
  now([&](Steps& s) { scatter_from_list(s, comm, ins, out, root, stream); });
}
Work scatter_async(std::span<const InputView> ins, BufferView out, int root, Stream stream) {
  return scatter_async(world(), ins, out, root, stream);
}
Work scatter_async(const Communicator& comm, std::span<const InputView> ins, BufferView out, int root, Stream stream) {
  return started(comm, "scatter", [&](Steps& s) { scatter_from_list(s, comm, ins, out, root, stream); });
}

}  // namespace mpidist
