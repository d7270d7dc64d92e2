"""perftest's CUDA (GPUDirect RDMA) part of a run with ``--use_cuda=N [--use_cuda_dmabuf]``, from the model.

Lines and their order are perftest's own (linux-rdma/perftest at 00b55b6660d0170dabe2c1b49193e8fbe265086e):
src/cuda_memory.c init_gpu ("initializing CUDA", "Listing all CUDA devices in system:", "CUDA device %d: PCIe
address is %02X:%02X", "\\nPicking device No. %d", "[pid = %d, dev = %d] device name = [%s]", "creating CUDA Ctx",
"making it the current CUDA Ctx"), cuda_allocate_device_memory_buffer ("CUDA device integrated: %X", with DMA-BUF
"using DMA-BUF for GPU buffer address at %#llx aligned at %#llx with aligned size %zu"),
cuda_memory_allocate_buffer ("allocated GPU buffer of a %lu address at %p for type CUDA_MEM_DEVICE") and free_gpu
("destroying current CUDA Ctx"), all on stdout. The buffer is perftest_resources.c's ``buff_size``: the message
size (at least a page) times two (send and receive halves) per QP.

Failures, on stderr as perftest prints them: without a way for the HCA to reach GPU memory (no ``nvidia_peermem`` in
the model's loaded modules and no DMA-BUF), ibv_reg_mr fails with EFAULT: "Couldn't allocate MR with error=14"
(perftest_resources.c create_single_mr), "failed to create mr" (create_mr), "Failed to create MR" (ctx_init),
" Couldn't create IB resources" (write_bw.c main), then "destroying current CUDA Ctx" on stdout; the same four
lines users paste (linux-rdma/perftest issue 346; issue 31 and 126 with "Couldn't allocate MR" from older
releases). A GPU index past the node's GPUs: "No such device ID (%d) exists in system" (init_gpu), "Couldn't init
GPU context: 1" (cuda_memory_init), "Failed to init memory" (ctx_init). No driver: "Failed to load CUDA library
dynamically" (cuda_memory_init, exit 1).
"""
from __future__ import annotations

import os
import secrets

import simhw

# ibv_reg_mr's errno on GPU memory the HCA driver cannot pin (EFAULT: linux-rdma/perftest issue 346, error=14)
EFAULT = 14
PAGE = 4096  # perftest's cycle buffer default: the page size
MR_FAILURE = (f"Couldn't allocate MR with error={EFAULT}\n", "failed to create mr\n", "Failed to create MR\n",
              " Couldn't create IB resources\n")


def buffer_size(args) -> int:
    """perftest_resources.c alloc_ctx: INC(BUFF_SIZE(size, cycle_buffer), cache line) * 2 * QPs."""
    return max(int(args.size), PAGE) * 2 * max(1, int(args.qp))


def peer_memory(model: dict) -> bool:
    """True where the HCA can register GPU memory without DMA-BUF: nvidia_peermem is loaded (a model written
    before the simulator listed modules counts as loaded)."""
    return "modules" not in model or "nvidia_peermem" in (model.get("modules") or [])


def _pointer() -> str:
    """A stack address as %p prints it (perftest prints the address of its pointer variable)."""
    return f"0x7ff{secrets.randbits(36):09x}"


def start(model: dict, args) -> tuple[str, str, bool]:
    """(stdout, stderr, ok) of perftest's CUDA setup for ``args.use_cuda`` on this node's model."""
    if simhw.driver(model) is None:
        return "Failed to load CUDA library dynamically\n", "", False
    gpus = simhw.visible_gpus(model)
    index = int(args.use_cuda)
    out = ["initializing CUDA\n"]
    if not gpus:
        return "".join(out + ["There are no available device(s) that support CUDA\n"]), \
            "Couldn't init GPU context: 1\nFailed to init memory\n Couldn't create IB resources\n", False
    if index >= len(gpus):
        return "".join(out), (f"No such device ID ({index}) exists in system\nCouldn't init GPU context: 1\n"
                              "Failed to init memory\n Couldn't create IB resources\n"), False
    out.append("Listing all CUDA devices in system:\n")
    out += [f"CUDA device {i}: PCIe address is {simhw.gpu_bus(g):02X}:00\n" for i, g in enumerate(gpus)]
    out += [f"\nPicking device No. {index}\n",
            f"[pid = {os.getpid()}, dev = {index}] device name = [{gpus[index]['model']}]\n",
            "creating CUDA Ctx\n", "making it the current CUDA Ctx\n", "CUDA device integrated: 0\n"]
    size = buffer_size(args)
    if args.use_cuda_dmabuf:
        address = f"0x7f{secrets.randbits(16):04x}00000000"
        out.append(f"using DMA-BUF for GPU buffer address at {address} aligned at {address} with aligned size "
                   f"{size}\n")
    out.append(f"allocated GPU buffer of a {size} address at {_pointer()} for type CUDA_MEM_DEVICE\n")
    if not args.use_cuda_dmabuf and not peer_memory(model):
        return "".join(out + ["destroying current CUDA Ctx\n"]), "".join(MR_FAILURE), False
    return "".join(out), "", True


def finish() -> str:
    """What perftest prints when it frees the GPU context at the end of a run."""
    return "destroying current CUDA Ctx\n"
