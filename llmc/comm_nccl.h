// The GPU trainer's communicators (llmc/comm.h) whose float and 16-bit collectives work on
// DEVICE buffers, enqueued on one CUDA stream given at creation; the host collectives (sums of
// doubles, barrier, broadcast) stay those of the MPI communicator they wrap.
//
// Which one, from the environment variable LLMC_GPU_COMM:
//   unset or "nccl"  under mpirun: NCCL, one GPU per rank (the GPU is the rank's local rank on
//                    its node). Rank 0 creates the NCCL id and broadcasts it over MPI.
//   "nccl"           as a single process too: a one-rank NCCL communicator (tests NCCL's code path
//                    on one GPU; every collective is then a copy or the identity).
//   "mpi"            under mpirun: MPI staged through pinned host memory (device -> host, the
//                    collective of llmc/comm_mpi.c, host -> device). Slow, but several ranks may
//                    share one GPU (rank r uses GPU local_rank % count), which NCCL refuses: it
//                    tests the ZeRO logic of several ranks on a one-GPU machine. Its sums have the
//                    MPI communicator's fixed owner order, so ZeRO stages 1..3 are bit-identical.
//   unset, one process: the single-process communicator (no NCCL, no MPI).
//
// Summation order under NCCL: NCCL sums in an order of its own (ring or tree, by message size and
// topology), fixed for a given communicator and size but not the owner order of comm.h, and a
// reduce-scatter with unequal parts (below) uses other algorithms than one with equal parts. So
// under NCCL, stages 0..3 agree up to fp32 rounding, and each repeats bit for bit.
//
// Failure handling under NCCL: the communicator is non-blocking (ncclConfig_t.blocking = 0); every
// call that answers ncclInProgress is polled with ncclCommGetAsyncError, and comm_gpu_wait polls
// the stream and the communicator's asynchronous error, both against LLMC_COMM_TIMEOUT seconds:
// a dead or hung rank ends the job (ncclCommAbort, then MPI_Abort) with a one-line error instead
// of hanging. A wait that is a plain cudaStreamSynchronize elsewhere in the trainer would still
// hang, so the trainer waits for its stream through comm_gpu_wait wherever collectives may be
// queued.
//
// STATUS: ran on an H100 at 7c74e66 and an H200 at c95ef56 (one NCCL rank, 2 and 3 staged-MPI
// ranks sharing the GPU; dev/gpu_report.md). NCCL across ranks has run only in the CPU emulator
// of dev/emu (t_45: NCCL's collectives over MPI, one emulated GPU per process).
#ifndef LLMC_COMM_NCCL_H
#define LLMC_COMM_NCCL_H

#include <cuda_runtime.h>

#include "comm.h"

// The CUDA device this rank uses (see above); exits 1 when NCCL would need more GPUs than the
// node has, or LLMC_GPU_COMM is not one of the values above.
int comm_gpu_device(const Comm *host);
// Makes gpu the device communicator of host's ranks, enqueuing on stream (created on the device
// of comm_gpu_device). gpu takes host over: gpu->finalize finalizes host too.
void comm_gpu_init(Comm *gpu, const Comm *host, cudaStream_t stream);
// Waits until everything queued on stream has run, with the deadline and error polling above
// (a plain cudaStreamSynchronize for the other communicators).
void comm_gpu_wait(Comm *gpu, cudaStream_t stream);

#endif
