// Asking MPI_T how the MPI library moves large messages on a node (copy_mechanism.hpp).
#include "mpi/copy_mechanism.hpp"

#include <mpi.h>

#include <cstring>

namespace mpidist::detail::mpi {
namespace {

// Whether `value` is the item named "none" of enumeration `values`.
bool names_none(MPI_T_enum values, int value) {
  if (values == MPI_T_ENUM_NULL) return false;
  int items = 0;
  char name[256];
  int length = sizeof name;
  if (MPI_T_enum_get_info(values, &items, name, &length) != MPI_SUCCESS) return false;
  for (int i = 0; i < items; ++i) {
    int item = 0;
    length = sizeof name;
    if (MPI_T_enum_get_item(values, i, &item, name, &length) != MPI_SUCCESS) return false;
    if (item == value) return std::strcmp(name, "none") == 0;
  }
  return false;
}

// Whether the control variable `variable`, an enumeration, holds its item "none".
bool variable_says_none(const char* variable) {
  int index = -1;
  if (MPI_T_cvar_get_index(variable, &index) != MPI_SUCCESS) return false;
  char name[256], description[1024];
  int name_length = sizeof name, description_length = sizeof description;
  int verbosity = 0, binding = 0, scope = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum values = MPI_T_ENUM_NULL;
  if (MPI_T_cvar_get_info(index, name, &name_length, &verbosity, &type, &values, description, &description_length,
                          &binding, &scope) != MPI_SUCCESS ||
      type != MPI_INT)
    return false;
  MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) return false;
  int value = 0;
  const bool none = count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS && names_none(values, value);
  MPI_T_cvar_handle_free(&handle);
  return none;
}

}  // namespace

bool may_copy_large_messages_once() {
  // At MPI's own thread level: Open MPI takes MPI_T's as the whole library's.
  int level = MPI_THREAD_SINGLE, provided = 0;
  MPI_Query_thread(&level);
  if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS) return true;
  const bool none = variable_says_none("btl_vader_single_copy_mechanism");
  MPI_T_finalize();
  return !none;
}

}  // namespace mpidist::detail::mpi
