// Lifecycle when the application owns MPI: mpidist adopts it, duplicates the communicator, and
// leaves MPI_Finalize to the application. Also use-before-init and re-initialization.
#include <mpi.h>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using LifecycleTest = mpidist_test::MpiTest;

bool mpi_initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

TEST_F(LifecycleTest, UseBeforeInitIsAClearError) {
  ASSERT_FALSE(mpidist::is_initialized());
  try {
    (void)mpidist::rank();
    ADD_FAILURE() << "rank() worked before initialization";
  } catch (const mpidist::Error& e) {
    EXPECT_EQ(e.rank(), -1);
    EXPECT_EQ(e.operation(), "rank");
    EXPECT_NE(std::string(e.what()).find("not initialized"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mpidist::barrier(), mpidist::Error);
  EXPECT_THROW(mpidist::communicator(), mpidist::Error);
  // Messages still work, without a rank prefix.
  EXPECT_EQ(mpidist::rank_prefixed_message("x"), "x");
}

TEST_F(LifecycleTest, EnvironmentAdoptsTheApplicationsMpi) {
  {
    mpidist::Environment env;  // MPI is already up: adopt it
    EXPECT_TRUE(mpidist::is_initialized());
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    EXPECT_EQ(mpidist::rank(), world_rank);
    int result = MPI_UNEQUAL;
    MPI_Comm_compare(mpidist::communicator(), MPI_COMM_WORLD, &result);
    EXPECT_EQ(result, MPI_CONGRUENT);
    mpidist::barrier();
  }
  EXPECT_FALSE(mpidist::is_initialized());
  EXPECT_TRUE(mpi_initialized()) << "mpidist finalized an MPI it did not start";
}

TEST_F(LifecycleTest, AdoptsASubCommunicator) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  // Odd and even world ranks form two separate jobs as far as mpidist is concerned.
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  {
    mpidist::Environment env(half);
    EXPECT_EQ(mpidist::rank(), world_rank / 2);
    EXPECT_EQ(mpidist::world_size(), (world_size + 1 - world_rank % 2) / 2);
    mpidist::run_on_main([] {});
  }
  MPI_Comm_free(&half);
  EXPECT_TRUE(mpi_initialized());
}

TEST_F(LifecycleTest, InitializeAndFinalizeFunctionsAreIdempotent) {
  mpidist::initialize();
  mpidist::initialize();  // second call is a no-op
  EXPECT_TRUE(mpidist::is_initialized());
  EXPECT_EQ(mpidist::is_distributed(), mpidist::world_size() > 1);
  mpidist::finalize();
  mpidist::finalize();
  EXPECT_FALSE(mpidist::is_initialized());
  EXPECT_THROW(mpidist::initialize(MPI_COMM_NULL), mpidist::Error);
  EXPECT_TRUE(mpi_initialized());
}

TEST_F(LifecycleTest, SyncAdoptsTheRunningMpi) {
  ASSERT_FALSE(mpidist::is_initialized());
  mpidist::sync();
  EXPECT_TRUE(mpidist::is_initialized());
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  EXPECT_EQ(mpidist::world_size(), world_size);
  mpidist::sync();  // already in line: nothing changes
  EXPECT_TRUE(mpidist::is_initialized());
  mpidist::finalize();
  EXPECT_TRUE(mpi_initialized());
}

// Groups still alive at finalize() are freed there; the handles the application still holds turn
// inert and every use is an Error that says why, never a crash on a freed MPI communicator.
TEST_F(LifecycleTest, HandlesOutlivingFinalizeAreInertErrors) {
  mpidist::Communicator world, parity, kept_null;
  {
    mpidist::Environment env;
    world = mpidist::world();
    parity = world.split(mpidist::rank() % 2);
    std::vector<int> values(3, 1);
    mpidist::all_reduce(parity, std::span(values));
    EXPECT_EQ(values[0], parity.size());
  }
  ASSERT_FALSE(mpidist::is_initialized());
  ASSERT_TRUE(parity);  // still a handle, but to a freed group
  for (const auto* comm : {&world, &parity}) {
    try {
      (void)comm->rank();
      ADD_FAILURE() << "a handle worked after finalize()";
    } catch (const mpidist::Error& e) {
      EXPECT_NE(std::string(e.what()).find("freed by finalize()"), std::string::npos) << e.what();
    }
  }
  std::vector<int> values(2, 1);
  EXPECT_THROW(mpidist::all_reduce(parity, std::span(values)), mpidist::Error);
  EXPECT_THROW(mpidist::barrier(world), mpidist::Error);
  // A new Environment gives new, working groups; the old handles stay inert.
  mpidist::Environment again;
  EXPECT_EQ(mpidist::world().size(), mpidist::world_size());
  EXPECT_THROW((void)parity.size(), mpidist::Error);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const int failed = mpidist_test::run_all_tests(argc, argv);
  MPI_Finalize();
  return failed;
}
