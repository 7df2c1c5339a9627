"""core/trace/event_names.py: the one vocabulary of event names, on names as Kineto writes them."""
from core.trace import event_names as en


def test_sync_and_blocking_calls():
    assert en.is_sync_call("cudaStreamSynchronize") and not en.is_sync_call("cudaStreamWaitEvent")
    assert en.is_blocking_memcpy("cudaMemcpy") and en.is_blocking_memcpy("cudaMemcpy2D")
    assert not en.is_blocking_memcpy("cudaMemcpyAsync")
    assert en.is_blocking_call("cudaDeviceSynchronize") and en.is_blocking_call("cudaMemcpy")
    assert not en.is_blocking_call("cudaLaunchKernel")


def test_dataloader_next():
    single = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    workers = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    assert en.is_dataloader_next(single) and en.is_dataloader_next(workers)
    assert not en.is_worker_dataloader_next(single) and en.is_worker_dataloader_next(workers)
    assert not en.is_dataloader_next("DataLoader.__init__")


def test_communication():
    assert en.is_comm_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    assert en.is_comm_kernel("rcclGenericKernel") and en.is_comm_kernel("void ncclKernel_AllGather(x)")
    assert not en.is_comm_kernel("gloo:all_reduce") and en.is_collective_op("gloo:all_reduce")
    assert not en.is_comm_kernel("volta_sgemm_128x64_nn")
    assert en.is_collective_op("c10d::allreduce_") and en.is_collective_op("nccl:all_reduce")
    assert not en.is_collective_op("aten::add")


def test_copies_compile_and_optimizer():
    assert en.is_pageable_copy("Memcpy HtoD (Pageable -> Device)")
    assert en.is_pageable_h2d("Memcpy HtoD (Pageable -> Device)")
    assert not en.is_pageable_h2d("Memcpy DtoH (Device -> Pageable)")
    assert en.is_pinned_copy("Memcpy HtoD (Pinned -> Device)", "HtoD")
    assert en.is_compile_event("entire_frame_compile") and en.is_compile_event("compile_attempt_3")
    assert en.is_compile_event("OutputGraph.call_user_compiler (dynamo_timed)")
    assert not en.is_compile_event("aten::mm")
    assert en.is_compiled_region("Torch-Compiled Region: 0/1")
    assert en.is_compiled_graph_call("CompiledFunction") and en.is_compiled_graph_call("## Call CompiledFxGraph f1 ##")
    assert en.is_optimizer_annotation("Optimizer.step#AdamW.step")
    assert en.is_optimizer_annotation("Optimizer.zero_grad#AdamW.zero_grad")
