// The control: counts in the integer types users hold them in compile.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "mpidist/mpidist.hpp"

void integer_counts() {
  std::vector<float> in(2), out(4);
  const std::vector<int> mpi_counts{2, 2};
  std::vector<long long> wide{2, 2};
  const std::array<unsigned, 2> fixed{2, 2};
  const std::vector<std::size_t> sizes{2, 2};
  mpidist::all_gather_v(std::span(in), std::span(out), mpi_counts);
  mpidist::all_gather_v(std::span(in), std::span(out), wide);
  mpidist::all_gather_v(mpidist::world(), std::span(in), std::span(out), fixed);
  mpidist::all_gather_v(std::span(in), std::span(out), {2, 2});
  mpidist::all_to_all(std::span(in), std::span<const int>(mpi_counts), std::span(out), sizes);
  mpidist::all_to_all(std::span(in), std::vector<int>{1, 1}, std::span(out), {2, 2});
  mpidist::Work work = mpidist::all_to_all_async(std::span(in), mpi_counts, std::span(out), wide);
  mpidist::Work gathered = mpidist::all_gather_v_async(std::span(in), std::span(out), {2, 2});
}
