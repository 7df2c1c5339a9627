"""What PyTorch / CUDA event names mean: the one vocabulary of op, kernel and runtime-call names that the
analyses, the rules and the exports test names against (issue 35, item 2).

Each concept is written once, here, as a name predicate `is_<concept>(name) -> bool` (module functions:
`StringTable.ids_matching` memoises them across ranks, core/trace/shared_match.py) or a tuple of exact names.
Use them with `model.strings.ids_matching(event_names.is_dataloader_next)` or the rules' helpers
(`common.rows_with_names(model, key, event_names.is_dataloader_next)`).

Where two copies of a concept used to disagree, the measurement that chose the one kept is in
docs/architecture.md ("One vocabulary of event names").
"""
from __future__ import annotations

import re

# --- host synchronisation -------------------------------------------------------------------------------
# CUDA runtime calls that block the CPU until the GPU (a stream, the device, an event) catches up
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
# the profiler's own flush at the end of a trace is the last root-level call of this name
DEVICE_SYNC = "cudaDeviceSynchronize"


def is_sync_call(name: str) -> bool:
    return name in SYNC_CALLS


def is_blocking_memcpy(name: str) -> bool:
    """A synchronous cudaMemcpy (cudaMemcpy, cudaMemcpy2D, ...; not cudaMemcpyAsync): the CPU waits."""
    return name.startswith("cudaMemcpy") and "Async" not in name


def is_blocking_call(name: str) -> bool:
    """A runtime call during which the CPU waits for the GPU: a sync call or a synchronous cudaMemcpy."""
    return name in SYNC_CALLS or is_blocking_memcpy(name)


# ops that read a GPU value on the host (or size an output by one), so they wait for the GPU
WOULD_SYNC_OPS = ("aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero",
                  "aten::masked_select", "aten::unique", "aten::_unique2", "aten::equal")

# --- memory copies ---------------------------------------------------------------------------------------


def is_pageable_copy(name: str) -> bool:
    """A memcpy from or to pageable (not pinned) host memory (`Memcpy HtoD (Pageable -> Device)`)."""
    return "Pageable" in name


def is_pageable_h2d(name: str) -> bool:
    return "HtoD" in name and "Pageable" in name


def is_pinned_copy(name: str, direction: str) -> bool:
    """A memcpy in `direction` ("HtoD", "DtoH", ...) from or to pinned host memory."""
    return direction in name and "Pinned" in name


# --- input pipeline --------------------------------------------------------------------------------------


def is_dataloader_next(name: str) -> bool:
    """One batch fetched from a DataLoader: `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`
    (num_workers=0) or `..._MultiProcessingDataLoaderIter.__next__` (worker processes)."""
    return name.startswith("enumerate(DataLoader)") and "__next__" in name


def is_worker_dataloader_next(name: str) -> bool:
    """A DataLoader `__next__` fed by worker processes (num_workers > 0)."""
    return is_dataloader_next(name) and "MultiProcessing" in name


# --- convolutions ---------------------------------------------------------------------------------------


def is_convolution_op(name: str) -> bool:
    """An aten convolution op (`aten::convolution`, `aten::cudnn_convolution`, `aten::convolution_backward`)."""
    return name.startswith("aten::") and "convolution" in name


# --- optimizer -------------------------------------------------------------------------------------------
OPTIMIZER_STEP_PREFIX = "Optimizer.step"  # `Optimizer.step#AdamW.step`
OPTIMIZER_ZERO_GRAD_PREFIX = "Optimizer.zero_grad"


def is_optimizer_annotation(name: str) -> bool:
    """The optimizer's record_function ranges: `Optimizer.step#...`, `Optimizer.zero_grad#...`."""
    return name.startswith(OPTIMIZER_STEP_PREFIX) or name.startswith(OPTIMIZER_ZERO_GRAD_PREFIX)


# --- communication ---------------------------------------------------------------------------------------
# GPU kernels of a collective library: HTA's CommunicateKernelGroupingPattern (NCCL / RCCL / HCCL)
COMM_KERNEL_PATTERN = re.compile(r"^(nccl|rccl|hccl)|ncclKernel|ncclDevKernel", re.IGNORECASE)


def is_comm_kernel(name: str) -> bool:
    """A communication (collective) GPU kernel: `ncclDevKernel_AllReduce_Sum_f32_RING_LL`, `rcclKernel...`."""
    return COMM_KERNEL_PATTERN.search(name) is not None


def is_collective_op(name: str) -> bool:
    """A CPU-side collective range (the host side of a collective: gloo ops, NCCL and c10d calls)."""
    return name.startswith(("gloo:", "nccl:", "c10d::", "record_param_comms")) or "all_reduce" in name


# --- torch.compile ---------------------------------------------------------------------------------------
# events of torch.compile itself running (dynamo tracing, inductor codegen, autotuning): the compile windows
COMPILE_PATTERN = re.compile(r"\(dynamo_timed\)$|^CachingAutotuner|compile_id=|^entire_frame_compile$|^backend_compile$"
                             r"|^inductor_compile$|^dynamo$|^compile_attempt_\d+$|^fx_codegen_and_compile$")
COMPILED_REGION_PREFIX = "Torch-Compiled Region: "  # `Torch-Compiled Region: 0/1` = frame 0, its 2nd compile


def is_compile_event(name: str) -> bool:
    return COMPILE_PATTERN.search(name) is not None


def is_compiled_region(name: str) -> bool:
    return name.startswith(COMPILED_REGION_PREFIX)


def is_compiled_graph_call(name: str) -> bool:
    """A call into a compiled graph (inductor's `## Call CompiledFxGraph ...`, aot_autograd's CompiledFunction)."""
    return name.startswith("## Call CompiledFxGraph") or name == "CompiledFunction"


# --- Python frames (python_function events, allocator snapshot stacks) ----------------------------------
# not the user's code: libraries, the interpreter, ptprof's runner; torchinductor_<user>/ is the code
# torch.compile generates (output_code)
LIBRARY_MARKERS = ("site-packages", "dist-packages", "/torch/", "/lib/python", "core/runner/", "/torchinductor_")
LIBRARY_PREFIXES = ("torch/", "<built-in", "<frozen", "threading.py", "runpy.py", "contextlib.py", "functools.py",
                    "nn.Module:", "Optimizer.", "<string>", "typing.py")


def is_library_frame(name: str) -> bool:
    """A frame (`file.py(42): fn`) of a library, the interpreter or ptprof's runner: not the user's code."""
    return name.startswith(LIBRARY_PREFIXES) or any(k in name for k in LIBRARY_MARKERS)
