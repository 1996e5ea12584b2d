// The NCCL subset of llmc/comm_nccl.cu, on the host, for the programs the emulator runs
// (dev/emu/cuda_emu.h): device buffers are host memory, so each collective is the MPI collective
// of the same meaning over a duplicate of MPI_COMM_WORLD (one process per rank, under mpirun; the
// duplicate keeps them apart from the program's own MPI calls, as NCCL's are), and a one-rank
// communicator needs no MPI (every collective is then a copy or the identity). Written from
// NCCL's documentation:
//   AllReduce, ReduceScatter (rank r's part is recv), AllGather (rank r's part at recv + r *
//   count), Reduce (to root's recv), Broadcast (from root's send to everyone's recv); in place
//   where send and recv are the documented in-place pointers.
// Non-blocking communicators (ncclConfig_t.blocking = 0), as comm_nccl.cu makes them: the set-up,
// each collective outside a group and ncclGroupEnd answer ncclInProgress, and the communicator
// reports ncclInProgress to the next ncclCommGetAsyncError before ncclSuccess, so the caller's
// polling runs. The arguments are checked at the call; the collective itself is work on its
// stream (cuda_runtime.cc), run when the stream gets to it.
// Sums follow MPI's order, not NCCL's (ring or tree): the same tolerances apply, not the same bits.
// A rank that dies leaves MPI's collectives waiting, as NCCL's would: llmc/comm_nccl.cu's deadline
// is not reached inside the blocking MPI call, so failure handling is t_50's (CPU) and a GPU's.
#include <mpi.h>
#include <nccl.h>

#include <climits>

#include "cuda_emu.h"

struct ncclComm {
    int nranks, rank;
    MPI_Comm mpi;  // MPI_COMM_NULL for one rank
    bool blocking;
    int in_progress_polls;  // ncclCommGetAsyncError answers ncclInProgress this many more times
};

namespace {
int group_depth = 0;

MPI_Datatype mpi_type(ncclDataType_t t) {
    switch (t) {
    case ncclFloat32: return MPI_FLOAT;
    case ncclUint8: return MPI_BYTE;
    default: emu::fail("NCCL: data type %d is not emulated", (int)t);
    }
}
size_t type_bytes(ncclDataType_t t) { return t == ncclFloat32 ? 4 : 1; }
int mpi_count(size_t n) {
    if (n > INT_MAX) emu::fail("NCCL: a count of %zu elements is more than one MPI call takes here", n);
    return (int)n;
}
void check_sum(ncclRedOp_t op) {
    if (op != ncclSum) emu::fail("NCCL: reduction %d is not emulated (only ncclSum)", (int)op);
}
void check_mpi(int rc, const char *what) {
    if (rc != MPI_SUCCESS) emu::fail("NCCL over MPI: %s failed (%d)", what, rc);
}
// What a collective answers: in a group, nothing yet; else in progress on a non-blocking one.
ncclResult_t issued(ncclComm_t comm) {
    if (group_depth > 0 || comm->blocking) return ncclSuccess;
    comm->in_progress_polls = 1;
    return ncclInProgress;
}
// What a collective's work needs, taken at the call: its bytes and MPI's count, type and
// communicator (MPI_COMM_NULL for one rank).
struct Call {
    size_t bytes;
    int n;
    MPI_Datatype type;
    MPI_Comm mpi;
};
Call call(ncclComm_t comm, size_t count, ncclDataType_t type) {
    return {count * type_bytes(type), mpi_count(count), mpi_type(type), comm->mpi};
}
// A one-rank collective's whole work: its send buffer into its receive buffer, unless in place.
void copy_unless_in_place(void *recv, const void *send, size_t bytes) {
    if (send != recv) memmove(recv, send, bytes);
}
// The collective runs when its stream gets to it (cuda_runtime.cc); the call answers at once. The
// overlap report (LLMC_EMU_OVERLAP) names it by its function and the bytes of the whole buffer it
// gathers, reduces or sends (ncclAllGather's and ncclReduceScatter's count is per rank).
ncclResult_t enqueue(ncclComm_t comm, cudaStream_t stream, const char *function, size_t bytes,
                     std::function<void()> work) {
    char name[64];
    snprintf(name, sizeof name, "%s %zu", function, bytes);
    emu::stream_enqueue(stream, std::move(work), emu::WorkKind::COLLECTIVE, name);
    return issued(comm);
}
}  // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "emulated NCCL over MPI_COMM_WORLD");
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId, int rank, ncclConfig_t *config) {
    if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
    if (nranks > 1) {
        int initialized = 0, size = 0, me = -1;
        MPI_Initialized(&initialized);
        if (!initialized) emu::fail("NCCL: %d ranks without MPI (the emulator's NCCL runs over MPI)", nranks);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (size != nranks || me != rank)
            emu::fail("NCCL: rank %d of %d, but MPI_COMM_WORLD says rank %d of %d", rank, nranks, me, size);
    }
    MPI_Comm mpi = MPI_COMM_NULL;
    if (nranks > 1) check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &mpi), "MPI_Comm_dup");
    *comm = new ncclComm{nranks, rank, mpi, !config || config->blocking != 0, 0};
    return issued(*comm);
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
    *state = comm->in_progress_polls > 0 ? ncclInProgress : ncclSuccess;
    if (comm->in_progress_polls > 0) comm->in_progress_polls--;
    return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t comm) { return issued(comm); }
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return delete comm, ncclSuccess; }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return delete comm, ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "emulated NCCL error"; }
const char *ncclGetLastError(ncclComm_t) { return ""; }

ncclResult_t ncclGroupStart() { return group_depth++, ncclSuccess; }
ncclResult_t ncclGroupEnd() {
    if (group_depth == 0) return ncclInvalidUsage;
    group_depth--;
    return ncclInProgress;  // the group's communicators are polled (every one here is non-blocking)
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    check_sum(op);
    const Call c = call(comm, count, type);
    return enqueue(comm, stream, "ncclAllReduce", c.bytes, [=] {
        if (c.mpi == MPI_COMM_NULL) {
            copy_unless_in_place(recv, send, c.bytes);
        } else {
            check_mpi(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, c.n, c.type, MPI_SUM, c.mpi), "MPI_Allreduce");
        }
    });
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
    check_sum(op);
    const Call c = call(comm, count, type);
    return enqueue(comm, stream, "ncclReduceScatter", c.bytes * comm->nranks, [=] {
        if (c.mpi == MPI_COMM_NULL) return copy_unless_in_place(recv, send, c.bytes);
        // recv may lie inside send (NCCL's in place: recv = send + rank * count), which MPI forbids.
        std::vector<unsigned char> part(c.bytes);
        check_mpi(MPI_Reduce_scatter_block(send, part.data(), c.n, c.type, MPI_SUM, c.mpi), "MPI_Reduce_scatter_block");
        memcpy(recv, part.data(), c.bytes);
    });
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
    const Call c = call(comm, count, type);
    unsigned char *mine = (unsigned char *)recv + (size_t)comm->rank * c.bytes;
    return enqueue(comm, stream, "ncclAllGather", c.bytes * comm->nranks, [=] {
        if (c.mpi == MPI_COMM_NULL) {
            copy_unless_in_place(mine, send, c.bytes);
        } else {
            check_mpi(MPI_Allgather(send == mine ? MPI_IN_PLACE : send, c.n, c.type, recv, c.n, c.type, c.mpi),
                      "MPI_Allgather");
        }
    });
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
    check_sum(op);
    if (root < 0 || root >= comm->nranks) return ncclInvalidArgument;
    const Call c = call(comm, count, type);
    const bool in_place = comm->rank == root && send == recv;
    return enqueue(comm, stream, "ncclReduce", c.bytes, [=] {
        if (c.mpi == MPI_COMM_NULL) {
            copy_unless_in_place(recv, send, c.bytes);
        } else {
            check_mpi(MPI_Reduce(in_place ? MPI_IN_PLACE : send, recv, c.n, c.type, MPI_SUM, root, c.mpi), "MPI_Reduce");
        }
    });
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    if (root < 0 || root >= comm->nranks) return ncclInvalidArgument;
    const Call c = call(comm, count, type);
    const bool root_copies = comm->rank == root;
    return enqueue(comm, stream, "ncclBroadcast", c.bytes, [=] {
        if (root_copies) copy_unless_in_place(recv, send, c.bytes);
        if (c.mpi != MPI_COMM_NULL) check_mpi(MPI_Bcast(recv, c.n, c.type, root, c.mpi), "MPI_Bcast");
    });
}

}  // extern "C"
