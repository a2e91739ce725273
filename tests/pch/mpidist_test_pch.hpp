// What nearly every test program parses first: GoogleTest (mpi_test.hpp), MPI, the whole mpidist
// API with the Boost.Serialization it includes, and the standard headers the suites share.
// Headers only, no macro of its own: a test means the same with it as without, and compiles
// faster. Compiled once per build into mpidist_test_pch.hpp.gch (make_pch.py) and put in front
// of each test source with -include, so the test programs stop parsing the same 140,000 lines
// each (docs/testing.md has the numbers). No #pragma once: it is only ever compiled on its own or
// -included, once.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
