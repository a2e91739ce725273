// Unsigned-safe MPI_MIN / MPI_MAX as user-defined MPI ops.
#include "mpi/comparison_ops.hpp"

#include <array>
#include <cstdint>
#include <limits>

#include "core/context.hpp"
#include "core/mpi_check.hpp"

namespace mpidist::detail::mpi {
namespace {

template <class T, bool smaller>
void compare(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *length; ++i)
    if (smaller ? a[i] < b[i] : a[i] > b[i]) b[i] = a[i];
}

// Whether the library's MPI_MIN and MPI_MAX order T as unsigned: 1 against the largest value but
// two, which a signed comparison takes for -3.
template <class T>
bool library_compares_unsigned(MPI_Datatype type) {
  const T small = 1, large = std::numeric_limits<T>::max() - 2;
  T min = large, max = small;
  MPIDIST_MPI_CHECK(MPI_Reduce_local(&small, &min, 1, type, MPI_MIN));
  MPIDIST_MPI_CHECK(MPI_Reduce_local(&large, &max, 1, type, MPI_MAX));
  return min == small && max == large;
}

// Per unsigned type: whether it was probed, the answer, and the two own ops if they were needed.
struct Entry {
  bool probed = false;
  bool sound = true;
  MPI_Op min = MPI_OP_NULL, max = MPI_OP_NULL;
};
std::array<Entry, 4> g_entries;  // uint8, uint16, uint32, uint64
bool g_cleanup_registered = false;

void free_ops() {
  for (auto& e : g_entries) {
    if (e.min != MPI_OP_NULL) MPI_Op_free(&e.min);
    if (e.max != MPI_OP_NULL) MPI_Op_free(&e.max);
    e = Entry{};  // probed again if mpidist is initialized again
  }
  g_cleanup_registered = false;
}

template <class T>
MPI_Op choose(Entry& e, MPI_Op op, MPI_Datatype type) {
  if (!e.probed) {
    e.sound = library_compares_unsigned<T>(type);
    if (!e.sound) {
      MPIDIST_MPI_CHECK(MPI_Op_create(&compare<T, true>, 1, &e.min));
      MPIDIST_MPI_CHECK(MPI_Op_create(&compare<T, false>, 1, &e.max));
    }
    e.probed = true;
    if (!g_cleanup_registered) at_finalize(free_ops);
    g_cleanup_registered = true;
  }
  if (e.sound) return op;
  return op == MPI_MIN ? e.min : e.max;
}

}  // namespace

MPI_Op comparison_op(MPI_Op op, MPI_Datatype type) {
  if (op != MPI_MIN && op != MPI_MAX) return op;
  if (type == MPI_UINT8_T) return choose<std::uint8_t>(g_entries[0], op, type);
  if (type == MPI_UINT16_T) return choose<std::uint16_t>(g_entries[1], op, type);
  if (type == MPI_UINT32_T) return choose<std::uint32_t>(g_entries[2], op, type);
  if (type == MPI_UINT64_T) return choose<std::uint64_t>(g_entries[3], op, type);
  return op;
}

}  // namespace mpidist::detail::mpi
