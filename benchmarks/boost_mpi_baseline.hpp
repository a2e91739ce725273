// Boost.MPI's object collectives and send/recv, bench_objects' baseline where the build has a Boost.MPI for the
// MPI it uses (MPIDIST_BENCH_BOOST_MPI=1; Debian builds Boost.MPI for Open MPI only). Without
// one, `available` is false, bench_objects leaves the baseline out and says so, and the stand-ins
// below are never called.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <vector>

#if MPIDIST_BENCH_BOOST_MPI
#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>

namespace boost_baseline {

constexpr bool available = true;

class Comm {
 public:
  explicit Comm(MPI_Comm comm) : comm_(comm, boost::mpi::comm_attach) {}

  template <class T>
  void broadcast(T& value, int root) { boost::mpi::broadcast(comm_, value, root); }

  template <class T>
  void gather(const T& mine, std::vector<T>& out, int root) {
    if (comm_.rank() == root)
      boost::mpi::gather(comm_, mine, out, root);
    else
      boost::mpi::gather(comm_, mine, root);
  }

  template <class T>
  void all_gather(const T& mine, std::vector<T>& out) { boost::mpi::all_gather(comm_, mine, out); }

  template <class T>
  void send(const T& value, int dest, int tag) { comm_.send(dest, tag, value); }
  template <class T>
  void recv(T& value, int src, int tag) { comm_.recv(src, tag, value); }

 private:
  boost::mpi::communicator comm_;
};

}  // namespace boost_baseline

#else

namespace boost_baseline {

constexpr bool available = false;

class Comm {
 public:
  explicit Comm(MPI_Comm) {}
  template <class T>
  void broadcast(T&, int) { std::abort(); }
  template <class T>
  void gather(const T&, std::vector<T>&, int) { std::abort(); }
  template <class T>
  void all_gather(const T&, std::vector<T>&) { std::abort(); }
  template <class T>
  void send(const T&, int, int) { std::abort(); }
  template <class T>
  void recv(T&, int, int) { std::abort(); }
};

}  // namespace boost_baseline

#endif
