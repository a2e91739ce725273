// The control: the same harness compiles the spellings that are element types.
#include <map>
#include <string>
#include <vector>

#include "mpidist/mpidist.hpp"

void supported() {
  std::vector<long long> steps(4);
  const std::vector<unsigned long> in(4);
  std::vector<unsigned long> out(4);
  std::vector<signed char> bytes(4);
  mpidist::all_reduce(std::span(steps));
  mpidist::all_reduce(std::span(in), std::span(out), mpidist::ReduceOp::Max);
  mpidist::broadcast(std::span(bytes));
  std::vector<float> loss(1);
  mpidist::average(std::map<std::string, std::span<float>>{{"loss", std::span(loss)}});
}
