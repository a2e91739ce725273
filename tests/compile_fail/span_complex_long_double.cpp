// std::complex<float> and std::complex<double> are element types; std::complex<long double> is
// not (no MPI or NCCL type): the in-place call must fail with mpidist's message.
#include <complex>
#include <vector>

#include "mpidist/collectives.hpp"

void reduce_long_double_amplitudes() {
  std::vector<std::complex<long double>> amplitudes(4);
  mpidist::all_reduce(std::span(amplitudes));
}
