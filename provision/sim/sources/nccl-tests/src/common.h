/* Simulated nccl-tests source (provision/sim/sources.py): upstream's common.h includes these. */
#include "nccl.h"
#ifdef MPI_SUPPORT
#include "mpi.h"
#endif
