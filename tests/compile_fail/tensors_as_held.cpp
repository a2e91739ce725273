// The control: buffers and lists of them as users hold them compile (a non-const std::vector or
// std::array where a buffer is taken, lists of vectors or spans, braced lists, maps of vectors),
// and const containers where a call only reads them.
#include <array>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "mpidist/mpidist.hpp"

void as_held() {
  std::vector<float> in(2), out(8);
  std::array<double, 4> fixed{};
  mpidist::all_gather(in, out);
  mpidist::all_reduce(fixed, fixed, mpidist::ReduceOp::Max);
  mpidist::Work a = mpidist::all_reduce_async(in, mpidist::ReduceOp::Avg);
  mpidist::Work b = mpidist::broadcast_async(mpidist::world(), out, 1);
  mpidist::Work c = mpidist::isend(in, 1, 7);
  mpidist::Work d = mpidist::irecv(out, 1, 7);
  mpidist::Work e = mpidist::batch_isend_irecv({mpidist::P2POp::send(in, 1), mpidist::P2POp::recv(out, 1)});
  std::vector<std::vector<float>> layers{in, out};
  std::vector<std::span<float>> spans{in, out};
  mpidist::all_reduce_many(layers);
  mpidist::all_reduce_many(spans, mpidist::ReduceOp::Avg);
  mpidist::all_reduce_many({std::span(in), std::span(fixed)});
  mpidist::Work f = mpidist::all_reduce_many_async(layers);
  std::map<std::string, std::vector<float>> metrics{{"loss", in}};
  mpidist::average(metrics);
  mpidist::GradientBuckets buckets(layers);
  mpidist::all_reduce(in, [](float x, float y) { return x < y ? y : x; });
}

// A const container where the call only reads it: the collectives' `in`, send, isend, P2POp::send.
void read_only(const std::vector<float>& in, std::vector<float>& out, const std::vector<int>& counts) {
  mpidist::all_gather(in, out);
  mpidist::all_reduce(mpidist::world(), in, out, mpidist::ReduceOp::Sum);
  mpidist::all_gather_v(in, out, counts);
  mpidist::all_to_all(in, out);
  mpidist::scatter(in, out, 1);
  mpidist::send(std::span(in), 1);
  mpidist::Work a = mpidist::isend(in, 1);
  mpidist::Work b = mpidist::reduce_scatter_async(in, out);
  mpidist::Work c = mpidist::batch_isend_irecv({mpidist::P2POp::send(in, 1), mpidist::P2POp::recv(out, 1)});
  // Spans and pointers of const elements, where a call reads them; a BufferView spelled out.
  const std::span<const float> edge(in);
  mpidist::all_gather(edge, out);
  mpidist::sendrecv(edge, 1, out, 1);
  mpidist::Work d = mpidist::isend(mpidist::InputView(in.data(), in.size()), 1);
  mpidist::all_gather(mpidist::BufferView(in.data(), in.size()), out);
  mpidist::reduce(mpidist::BufferView(edge), out, mpidist::ReduceOp::Max, 1);
}

// The non-blocking list forms as torch users write them (async_op=True): lists of vectors, a const
// list where the call reads it, a temporary list of spans; beside them the contiguous gather.
void async_lists(const std::vector<float>& in, std::vector<std::vector<float>>& outs,
                 const std::vector<std::vector<float>>& parts, std::vector<float>& out) {
  mpidist::Work a = mpidist::all_gather_async(in, outs);
  mpidist::Work b = mpidist::reduce_scatter_async(parts, out, mpidist::ReduceOp::Max);
  mpidist::Work c = mpidist::all_to_all_async(parts, outs);
  mpidist::Work d = mpidist::gather_async(mpidist::world(), in, outs, 1);
  mpidist::Work e = mpidist::scatter_async(parts, out, 1);
  mpidist::Work f = mpidist::all_gather_async(std::span(in), std::vector<std::span<float>>(outs.begin(), outs.end()));
  mpidist::Work g = mpidist::gather_async(in, out, 0);
  mpidist::Work h = mpidist::scatter_async(mpidist::world(), in, out, 1);
  // A span of views as the list a call reads.
  std::vector<mpidist::BufferView> views(outs.begin(), outs.end());
  const std::span<const mpidist::BufferView> held(views);
  mpidist::reduce_scatter(held, out);
  mpidist::Work i = mpidist::scatter_async(held, out, 1);
  mpidist::all_to_all(held, views);
}
