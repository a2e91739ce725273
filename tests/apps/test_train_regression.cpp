// The data-parallel example (apps/train_regression.cpp) reaches the same weights on 1, 2 and 4
// ranks: the averaged gradient of a global batch does not depend on how it is split.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "mpi_test.hpp"

namespace {

std::vector<double> train(int ranks) {
  const char* app = std::getenv("TRAIN_REGRESSION");
  const std::string checkpoint = "/tmp/mpidist-regression-" + std::to_string(getpid()) + "-" + std::to_string(ranks);
  std::remove(checkpoint.c_str());
  const auto result = mpidist_test::run_command(mpidist_test::mpiexec_prefix(ranks) + (app ? app : "missing-app") +
                                                    " --epochs 5 --checkpoint " + checkpoint, 120);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  // Progress comes from rank 0 only, rank-prefixed.
  EXPECT_NE(result.output.find("[rank 0/" + std::to_string(ranks) + "] INFO mpidist: epoch 5/5"), std::string::npos)
      << result.output;
  EXPECT_EQ(result.output.find("[rank 1/"), std::string::npos) << result.output;
  std::vector<double> weights;
  std::ifstream in(checkpoint);
  for (double w; in >> w;) weights.push_back(w);
  std::remove(checkpoint.c_str());
  return weights;
}

TEST(TrainRegression, OneTwoAndFourRanksReachTheSameWeights) {
  const auto one = train(1);
  ASSERT_EQ(one.size(), 9u);
  for (int ranks : {2, 4}) {
    const auto many = train(ranks);
    ASSERT_EQ(many.size(), one.size()) << ranks << " ranks";
    for (std::size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(many[i], one[i], 1e-4) << "weight " << i << ", " << ranks << " ranks";
  }
  // And they are the weights the data was made from (bias last).
  for (int f = 0; f < 8; ++f) EXPECT_NEAR(one[static_cast<std::size_t>(f)], (f - 3.5) / 4.0, 1e-2) << "weight " << f;
  EXPECT_NEAR(one[8], 0.5, 1e-2);
}

}  // namespace
