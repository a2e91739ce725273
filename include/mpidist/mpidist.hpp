// mpidist: distributed-training helpers for mpiexec-launched C++ jobs. One include for all of it.
#pragma once

#include "mpidist/collectives.hpp"
#include "mpidist/communicator.hpp"
#include "mpidist/config.hpp"
#include "mpidist/device.hpp"
#include "mpidist/environment.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"
#include "mpidist/launch.hpp"
#include "mpidist/log.hpp"
#include "mpidist/objects.hpp"
#include "mpidist/p2p.hpp"
#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"
#include "mpidist/topology.hpp"
#include "mpidist/work.hpp"
