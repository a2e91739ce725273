// Preloaded into MPICH test jobs (LD_PRELOAD, tests/meson.build): a rank whose UCX progress call
// finds nothing to do gives up the processor, as Open MPI's mpi_yield_when_idle does. MPICH has no
// such setting (MPIR_CVAR_POLLS_BEFORE_YIELD changes nothing measurable under ch4:ucx), so 4 ranks
// on 2 cores spin through each other's time slices: a 4-rank suite took 25 s instead of 1.2 s.
// Jobs whose MPICH does not use UCX never call it, and run as before.
#include <dlfcn.h>
#include <sched.h>

extern "C" {

struct ucp_worker;

unsigned ucp_worker_progress(ucp_worker* worker) {
  using Progress = unsigned (*)(ucp_worker*);
  static const auto next = reinterpret_cast<Progress>(dlsym(RTLD_NEXT, "ucp_worker_progress"));
  const unsigned events = next(worker);
  if (events == 0) sched_yield();
  return events;
}

}
