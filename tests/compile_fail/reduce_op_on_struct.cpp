// A ReduceOp on a struct cannot reduce it: the error must say to pass a function instead.
#include "mpidist/objects.hpp"

struct Metrics {
  double loss = 0;
  int steps = 0;
};

Metrics total(const Metrics& m) { return mpidist::all_reduce(m, mpidist::ReduceOp::Sum); }
