"""Multi-rank runs built from one real trace: N rank files with jittered time bases, NCCL-like collectives
keyed by process group + sequence number, and one slow rank (the straggler) with its cause.

    python bench/multi/gen_ranks.py --source gpu_gpt_big --ranks 32 --out /tmp/mr32 [--slow-rank 5]

Every rank is the source trace (all its events, unchanged) plus:
- `baseTimeNanoseconds` moved by a per-rank jitter (0-3 ms, seeded): the ranks' clocks start apart, as on
  a real cluster, so a reader must put them on one time base;
- `distributedInfo` {backend nccl, rank, world_size, pg_config} in the header;
- per ProfilerStep, `--per-step` all-reduce / reduce-scatter kernels on a communication stream (tid 901),
  each with Kineto's collective args ("Collective name", "Process Group Name", "Process Group Description",
  "Seq", "In msg nelems", "Group size"). Collective k starts at the same wall-clock moment on every rank
  (+ up to 20 µs of noise) and ends at the same moment everywhere (last arrival + the transfer);
- on the slow rank, each collective arrives `--delay-us` late and a `slow_rank_data_prep` record_function
  range (on a thread of its own) covers the wait: what the straggler rule must name as the cause.

Files are written as rank{r}.pt.trace.json.gz (ISA-L gzip level 1 when installed). The source's events are
not rewritten: only the header and the first bytes of the events array change, so a rank costs one
compression of the source text. Mind the disk: 128 x gpt_big = ~1.2 GB, 32 x big_stack = ~2.4 GB.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COMM_TID = 901  # the communication stream of the injected kernels
PREP_TID = 777_777  # the slow rank's data-prep thread
NAMES = ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
         "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)")
COLL = ("allreduce", "reduce_scatter")
TRANSFER_US = 250.0
NOISE_US = 20.0


def source_path(name: str) -> Path:
    p = Path(name)
    if p.exists():
        return p
    shared = Path(os.environ.get("PTPROF_SHARED_TRACES", ROOT.parent.parent / "shared" / "traces"))
    for suffix in (".pt.trace.json.gz", ".pt.trace.json.xz", ".pt.trace.json"):
        if (shared / (name + suffix)).exists():
            return shared / (name + suffix)
    raise SystemExit(f"no source trace {name!r} (looked in {shared})")


def source_steps(path: Path) -> tuple[list[tuple[float, float]], int, int]:
    """(ProfilerStep windows in the file's µs, the CPU process id, the GPU pid of device 0) from the model."""
    from core.analysis.steps import step_windows
    from core.trace.loader import load
    from core.trace.model import Kind
    ts = load(path)
    m = ts.models[0]
    windows = step_windows(m)
    if windows.synthetic:
        raise SystemExit(f"{path.name}: no ProfilerStep ranges to place the collectives in")
    return [(float(a), float(b)) for a, b in zip(windows.t0_ns, windows.t1_ns)], int(m.meta.base_unix_ns), int(Kind.KERNEL)


def _ev(**kw) -> bytes:
    return b"\n  " + json.dumps(kw, separators=(", ", ": ")).encode() + b","


def rank_events(rank: int, world: int, slow: int, steps_ns: list[tuple[float, float]], origin_us: float,
                jitter_us: float, per_step: int, delay_us: float, cpu_pid, gpu_pid, seed: int) -> bytes:
    """The injected events of one rank (text, each followed by a comma), in this rank's file µs."""
    rnd = random.Random(seed * 100_003 + rank)
    out = []
    seq = 0
    for t0_ns, t1_ns in steps_ns:
        span = (t1_ns - t0_ns) / 1000.0
        for k in range(per_step):
            # collective k of the step, in the run's common µs (origin of the source = rank 0's clock)
            g = origin_us + t0_ns / 1000.0 + span * (0.5 + 0.45 * k / max(per_step, 1))
            late = delay_us if rank == slow else 0.0
            arrival = g + rnd.random() * NOISE_US + late
            end = g + NOISE_US + delay_us + TRANSFER_US  # the same moment on every rank
            kind = k % len(NAMES)
            args = {"device": 0, "stream": COMM_TID, "correlation": 2_000_000_000 + seq,
                    "Collective name": COLL[kind], "Process Group Name": "0", "Process Group Description":
                    "default_pg", "Seq": seq, "In msg nelems": 4_194_304, "Group size": world, "dtype": "BFloat16"}
            out.append(_ev(ph="X", cat="kernel", name=NAMES[kind], pid=gpu_pid, tid=COMM_TID,
                           ts=round(arrival - jitter_us, 3), dur=round(end - arrival, 3), args=args))
            if rank == slow:
                out.append(_ev(ph="X", cat="user_annotation", name="slow_rank_data_prep", pid=cpu_pid,
                               tid=PREP_TID, ts=round(g - 40.0 - jitter_us, 3), dur=round(delay_us + 30.0, 3),
                               args={"External id": 3_000_000_000 + seq}))
            seq += 1
    return b"".join(out)


_BASE = re.compile(rb'"baseTimeNanoseconds":\s*(\d+)')
_PID = re.compile(rb'"cat":\s*"cpu_op"[^}]*?"pid":\s*(\d+)')


def generate(source: Path, ranks: int, out: Path, slow: int | None = None, per_step: int = 4,
             delay_us: float | None = None, seed: int = 0, level: int = 1) -> dict:
    from core.trace import io
    t_start = time.perf_counter()
    steps_ns, base_unix_ns, _ = source_steps(source)
    buf = io.read_bytes(source)
    text = memoryview(buf)
    head_end = bytes(text[:1 << 16]).find(b'"traceEvents": [')
    if head_end < 0:
        raise SystemExit(f"{source.name}: no '\"traceEvents\": [' in its first 64 KB")
    head = bytes(text[:head_end])
    m = _BASE.search(head)
    base_doc = int(m.group(1)) if m else 0
    origin_us = (base_unix_ns - base_doc) / 1000.0 if base_doc else 0.0
    sample = bytes(text[head_end:head_end + (8 << 20)])
    cpu_pid = int(_PID.search(sample).group(1)) if _PID.search(sample) else 1
    gpu_pid = 0  # Kineto: a GPU event's pid is its device index, its tid the stream
    body = text[head_end + len(b'"traceEvents": ['):]
    rnd = random.Random(seed)
    slow = rnd.randrange(ranks) if slow is None else slow
    step_us = sorted((b - a) / 1000.0 for a, b in steps_ns)[len(steps_ns) // 2]
    # late enough that the others lose ~10 % of a step per step (the rule's floor is 3 %)
    delay_us = delay_us if delay_us is not None else max(200.0, 0.10 * step_us / per_step)
    out.mkdir(parents=True, exist_ok=True)
    try:
        from isal import igzip as gz
    except ImportError:  # pragma: no cover
        gz = gzip
    pg = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": ranks,
           "ranks": list(range(ranks)) if ranks <= 64 else f"0..{ranks - 1}"}]
    jitters = []
    for r in range(ranks):
        jitter_us = float(rnd.randrange(0, 3000))
        jitters.append(jitter_us)
        dist = json.dumps({"backend": "nccl", "rank": r, "world_size": ranks, "pg_count": 1, "pg_config": pg})
        h = _BASE.sub(b'"baseTimeNanoseconds": %d' % (base_doc + int(jitter_us * 1000)), head) if m else head
        h = h.replace(b'"displayTimeUnit"', b'"distributedInfo": ' + dist.encode() + b',\n  "displayTimeUnit"', 1)
        injected = rank_events(r, ranks, slow, steps_ns, origin_us, jitter_us, per_step, delay_us, cpu_pid, gpu_pid,
                               seed)
        path = out / f"rank{r}.pt.trace.json.gz"
        tmp = path.with_suffix(".tmp")
        with gz.open(tmp, "wb", compresslevel=level) as fh:
            fh.write(h)
            fh.write(b'"traceEvents": [')
            fh.write(injected)
            fh.write(body)
        os.replace(tmp, path)
    del body, text
    info = {"source": str(source), "ranks": ranks, "slow_rank": slow, "delay_us": delay_us, "per_step": per_step,
            "steps": len(steps_ns), "collectives": per_step * len(steps_ns), "jitter_us": jitters,
            "seconds": round(time.perf_counter() - t_start, 2)}
    (out / "generated.json").write_text(json.dumps(info, indent=1))
    return info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", default="gpu_gpt_big", help="shared trace name or a trace file")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--out", required=True)
    p.add_argument("--slow-rank", type=int, default=None, help="default: a seeded random rank")
    p.add_argument("--per-step", type=int, default=4, help="collectives per ProfilerStep")
    p.add_argument("--delay-us", type=float, default=None, help="how late the slow rank arrives")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--level", type=int, default=1, help="gzip level")
    a = p.parse_args(argv)
    info = generate(source_path(a.source), a.ranks, Path(a.out), a.slow_rank, a.per_step, a.delay_us, a.seed,
                    a.level)
    print(json.dumps({k: v for k, v in info.items() if k != "jitter_us"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
