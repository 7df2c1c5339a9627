"""What filled the GPU when a run died of OOM, and which allocation stack grows step after step (issue 32).

    reports = oom_reports(bundle_dir)      # one OomReport per rank that ran out of memory (run.json "oom")
    growth = memory_growth(snapshot, step_ends_ns)   # allocation stacks whose live bytes rise every step

An OomReport sets the failing request against free / reserved / allocated memory (the allocator's
observer, else torch's message), groups the allocations live at that moment (the snapshot the child wrote
at the failure: core/runner/memhist.py) by where they were allocated (the innermost user frame, else the
ATen op), top 20 by bytes, measures fragmentation (reserved but unallocated, the largest free block
against the request) and turns what it sees into concrete suggestions. Qt-free; the OOM view
(gui/snapshot/oom_view.py) and `ptprof analyze` (the `oom` finding) both read it.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.snapshot.model import BlockState, MemorySnapshot
from core.snapshot.timeline import free_event_of_allocs
from core.units import fmt_bytes

TOP_GROUPS = 20
MIN_GROWTH_BYTES = 8 << 20  # a stack must gain at least this much over the steps to be named
MIN_RISING_FRACTION = 0.75  # ... and rise in this share of the step intervals
NO_STACK = "(no stack: allocated before the history began, by C++ only, or without --memory-history)"


@dataclass(frozen=True, slots=True)
class StackGroup:
    where: str  # innermost user frame `file:line in fn`, else `aten::op (no Python frame)`, else NO_STACK
    bytes: int
    count: int
    kind: str  # "optimizer state" | "parameters" | "activations" | "backward" | "other"
    frames: tuple[str, ...] = ()  # the stack, the user's frames first, then the library ones (<= 12)


@dataclass(frozen=True, slots=True)
class Growth:
    where: str
    per_step_bytes: tuple[int, ...]  # live bytes of the stack at each step's end
    kind: str = "other"

    @property
    def growth_bytes(self) -> int:
        return self.per_step_bytes[-1] - self.per_step_bytes[0]


@dataclass(frozen=True, slots=True)
class OomReport:
    rank: int
    device: int
    request_bytes: int
    free_bytes: int | None
    reserved_bytes: int | None
    allocated_bytes: int | None
    total_bytes: int | None  # the device's capacity, or the per-process cap when one was set (capped)
    where: str  # the innermost user frame of the failing call
    message: str
    snapshot: str  # path of the snapshot written at the failure ("" when none)
    history: bool  # the snapshot holds the allocator's history (stacks, trace)
    live_bytes: int = 0
    largest_free_block_bytes: int = 0
    groups: tuple[StackGroup, ...] = ()
    kinds: dict = field(default_factory=dict)  # kind -> live bytes
    growth: tuple[Growth, ...] = ()
    suggestions: tuple[str, ...] = ()
    capped: bool = False  # torch.cuda.set_per_process_memory_fraction: free / total are under that cap

    @property
    def unallocated_reserved_bytes(self) -> int | None:
        if self.reserved_bytes is None or self.allocated_bytes is None:
            return None
        return max(self.reserved_bytes - self.allocated_bytes, 0)

    @property
    def fragmented(self) -> bool:
        """Enough reserved-but-unallocated memory for the request, but no free block that holds it."""
        spare = self.unallocated_reserved_bytes or 0
        return spare >= self.request_bytes > self.largest_free_block_bytes

    def headline(self) -> str:
        cap = f" under the {fmt_bytes(self.total_bytes)} cap" if self.capped and self.total_bytes else ""
        free = "" if self.free_bytes is None else f", {fmt_bytes(self.free_bytes)} free{cap}"
        res = "" if self.reserved_bytes is None else f", {fmt_bytes(self.reserved_bytes)} reserved"
        return f"rank {self.rank} ran out of GPU {self.device} memory asking for {fmt_bytes(self.request_bytes)}{free}{res}"


def _int(v) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**62 else None


def _text(v, limit: int = 2000) -> str:
    return v[:limit] if isinstance(v, str) else ""


# ---- reading a bundle ----

def read_run(root: Path) -> dict:
    from core.trace.safefile import read_json_file
    try:  # a regular file of bounded size and depth: a FIFO at run.json must not block the window's open
        run = read_json_file(root / "run.json")
    except (OSError, ValueError, RecursionError):
        return {}
    return run if isinstance(run, dict) else {}


def step_ends_ns(root: Path, rank: int) -> list[int]:
    """Wall-clock end of each step of `rank` (events.jsonl "step" events: t_ns = time.time_ns at the hook)."""
    out: list[int] = []
    try:
        from core.trace.safefile import open_regular
        with io.TextIOWrapper(open_regular(root / "events.jsonl"), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh):
                if n > 2_000_000:
                    break
                if '"step"' not in line:
                    continue
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if isinstance(e, dict) and e.get("type") == "step" and e.get("rank", 0) == rank \
                        and _int(e.get("t_ns")) is not None:
                    out.append(int(e["t_ns"]))
    except OSError:
        return []
    return sorted(out)


def oom_reports(root: str | Path, load=None) -> list[OomReport]:
    """One report per OOM recorded in the bundle's run.json (the child's `oom` events). `load(path)` reads a
    snapshot (default core.snapshot.load_snapshot); a snapshot that cannot be read leaves the figures."""
    root = Path(root)
    run = read_run(root)
    ooms = run.get("oom")
    if not isinstance(ooms, list):
        return []
    if load is None:
        from core.snapshot.load import load_snapshot as load
    out = []
    for rec in ooms[:64]:
        if not isinstance(rec, dict):
            continue
        snap = None
        name = _text(rec.get("snapshot"), 200)
        if name and "/" not in name and "\\" not in name and (root / name).is_file():
            try:
                snap = load(root / name)
            except Exception:  # noqa: BLE001 - a bad snapshot leaves the run.json figures
                snap = None
        rank = _int(rec.get("rank")) or 0
        out.append(build_report(rec, snap, step_ends_ns(root, rank), str(root / name) if snap else ""))
    return out


# ---- the report ----

def build_report(rec: dict, snap: MemorySnapshot | None, step_ends: list[int], snapshot_path: str = "") -> OomReport:
    device = _int(rec.get("device")) or 0
    request = _int(rec.get("size_bytes")) or 0
    reserved = _int(rec.get("reserved_bytes"))
    allocated = _int(rec.get("allocated_bytes"))
    limit = _int(rec.get("limit_bytes"))  # a per-process cap (set_per_process_memory_fraction): what "free" means
    total = limit or _int(rec.get("total_bytes"))
    free = _int(rec.get("free_bytes"))
    if limit and reserved is not None:
        free = max(limit - reserved, 0)
    groups: tuple[StackGroup, ...] = ()
    kinds: dict = {}
    largest_free = 0
    live = 0
    growth: tuple[Growth, ...] = ()
    if snap is not None:
        seg = snap.segments.device == device
        if reserved is None or not reserved:
            reserved = int(snap.segments.total_size[seg].sum())
        if allocated is None or not allocated:
            allocated = int(snap.segments.allocated_size[seg].sum())
        groups, kinds, live = live_groups(snap, device)
        blocks = snap.blocks
        on_dev = seg[blocks.segment] if len(blocks) else np.zeros(0, bool)
        free_blocks = on_dev & (blocks.state == BlockState.INACTIVE.value)
        largest_free = int(blocks.size[free_blocks].max()) if free_blocks.any() else 0
        growth = tuple(memory_growth(snap, device, step_ends))
    report = OomReport(
        rank=_int(rec.get("rank")) or 0, device=device, request_bytes=request, free_bytes=free,
        reserved_bytes=reserved, allocated_bytes=allocated, total_bytes=total, capped=bool(limit),
        where=_text(rec.get("where"), 500), message=_text(rec.get("message")), snapshot=snapshot_path,
        history=snap is not None and bool(snap.traces), live_bytes=live, largest_free_block_bytes=largest_free,
        groups=groups, kinds=kinds, growth=growth)
    return _with_suggestions(report, snap, step_ends)


def _kind(snap: MemorySnapshot, s: int) -> str:
    if s < 0:
        return "other"
    st = snap.stacks
    files = [st.frame_file[f] for f in st.stack(s)]
    names = [st.frame_name[f] for f in st.stack(s)]
    if any("torch/optim/" in f for f in files):
        return "optimizer state"
    if any(n in ("_apply", "cuda", "to", "reset_parameters", "__init__") and "nn/modules" in f
           for f, n in zip(files, names)):
        return "parameters"
    if not any(f.endswith(".py") for f in files):
        return "backward"  # the autograd engine's thread: no Python frame
    if any(n == "forward" or "nn/modules" in f or "nn/functional" in f for f, n in zip(files, names)):
        return "activations"
    return "other"


def _frames_text(snap: MemorySnapshot, s: int) -> tuple[str, ...]:
    st = snap.stacks
    ids = st.stack(s)
    user = [f for f in ids if st.frame_file[f].endswith(".py") and "site-packages" not in st.frame_file[f]
            and "/torch/" not in st.frame_file[f] and "/core/runner/" not in st.frame_file[f]]  # not ptprof's child
    rest = [f for f in ids if f not in user]
    return tuple(st.describe_frame(f) for f in (user + rest)[:12])


def live_groups(snap: MemorySnapshot, device: int) -> tuple[tuple[StackGroup, ...], dict, int]:
    """Blocks allocated at snapshot time on `device`, grouped by where they were allocated, largest first."""
    blocks = snap.blocks
    if not len(blocks):
        return (), {}, 0
    on_dev = snap.segments.device[blocks.segment] == device
    live = on_dev & (blocks.state == BlockState.ACTIVE_ALLOCATED.value)
    idx = np.flatnonzero(live)
    by_where: dict[str, list] = {}
    kinds: dict[str, int] = {}
    for s, size in zip(blocks.stack[idx].tolist(), blocks.size[idx].tolist()):
        where = (snap.stacks.where(s) if s >= 0 else "") or NO_STACK
        g = by_where.setdefault(where, [0, 0, s])
        g[0] += size
        g[1] += 1
        k = _kind(snap, s) if s >= 0 else "other"
        kinds[k] = kinds.get(k, 0) + size
    top = sorted(by_where.items(), key=lambda kv: -kv[1][0])[:TOP_GROUPS]
    groups = tuple(StackGroup(w, b, n, _kind(snap, s), _frames_text(snap, s) if s >= 0 else ())
                   for w, (b, n, s) in top)
    return groups, kinds, int(blocks.size[idx].sum())


def memory_growth(snap: MemorySnapshot, device: int, step_ends: list[int]) -> list[Growth]:
    """Allocation sites (grouped as live_groups does) whose live bytes and live allocation count at the end
    of each step rise in at least MIN_RISING_FRACTION of the intervals, by at least MIN_GROWTH_BYTES in all,
    largest growth first."""
    tr = snap.trace(device)
    if tr is None or not len(tr) or len(step_ends) < 3:
        return []
    t0, t1 = tr.span_ns
    ends = np.array([t for t in step_ends if t0 <= t <= t1 + 1_000_000_000], np.int64)
    if len(ends) < 3:
        return []
    allocs, frees = free_event_of_allocs(tr)
    t_alloc = tr.time_ns[allocs]
    t_free = np.where(frees >= 0, tr.time_ns[np.maximum(frees, 0)], np.iinfo(np.int64).max)
    where_of = {}
    for s in np.unique(tr.stack[allocs]).tolist():
        where_of[s] = (snap.stacks.where(s) if s >= 0 else "") or NO_STACK
    wheres = sorted(set(where_of.values()))
    code = {w: i for i, w in enumerate(wheres)}
    group = np.array([code[where_of[s]] for s in tr.stack[allocs].tolist()], np.int64)
    size = tr.size[allocs]
    per_step = np.zeros((len(ends), len(wheres)), np.int64)
    count = np.zeros((len(ends), len(wheres)), np.int64)
    for k, t in enumerate(ends.tolist()):
        alive = (t_alloc <= t) & (t_free > t)
        per_step[k] = np.bincount(group[alive], weights=size[alive], minlength=len(wheres)).astype(np.int64)
        count[k] = np.bincount(group[alive], minlength=len(wheres))
    rising = (np.diff(per_step, axis=0) > 0).mean(axis=0)
    # kept, not merely bigger: the number of live allocations rises too (one tensor that grows with a
    # growing batch is `_request_sizes_grow`'s case, not a leak)
    more = (np.diff(count, axis=0) > 0).mean(axis=0)
    gained = per_step[-1] - per_step[0]
    hit = np.flatnonzero((rising >= MIN_RISING_FRACTION) & (more >= MIN_RISING_FRACTION) & (gained >= MIN_GROWTH_BYTES))
    stack_of = {w: s for s, w in where_of.items()}
    out = [Growth(wheres[g], tuple(int(v) for v in per_step[:, g]), _kind(snap, stack_of[wheres[g]]))
           for g in hit.tolist()]
    return sorted(out, key=lambda gr: -gr.growth_bytes)


def _request_sizes_grow(snap: MemorySnapshot | None, device: int, where: str, step_ends: list[int]) -> float:
    """Ratio of the largest allocation made at `where` in the last step to the one in the first step
    (> 1.5: the batch, or a sequence length, grows step after step); 0 when unknown."""
    if snap is None or not where or len(step_ends) < 3:
        return 0.0
    tr = snap.trace(device)
    if tr is None or not len(tr):
        return 0.0
    from core.snapshot.model import Action
    is_alloc = tr.action == Action.ALLOC
    stacks = [s for s in np.unique(tr.stack[is_alloc]).tolist() if s >= 0 and snap.stacks.where(s) == where]
    if not stacks:
        return 0.0
    sel = is_alloc & np.isin(tr.stack, stacks)
    t, size = tr.time_ns[sel], tr.size[sel]
    ends = np.array(step_ends, np.int64)
    step_of = np.searchsorted(ends, t)
    biggest = [int(size[step_of == k].max()) for k in np.unique(step_of).tolist()]
    return biggest[-1] / biggest[0] if len(biggest) >= 3 and biggest[0] > 0 else 0.0


def _with_suggestions(r: OomReport, snap: MemorySnapshot | None, step_ends: list[int]) -> OomReport:
    out: list[str] = []
    live = max(r.live_bytes, 1)
    if r.fragmented:
        out.append(f"Fragmentation: {fmt_bytes(r.unallocated_reserved_bytes or 0)} is reserved but unallocated, "
                   f"more than the {fmt_bytes(r.request_bytes)} asked for, yet the largest free block is "
                   f"{fmt_bytes(r.largest_free_block_bytes)}. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                   "(the allocator then gives the holes' pages back and maps the request).")
    for g in r.growth[:1]:
        out.append(f"Growth: the tensors allocated at {g.where} stay alive, +{fmt_bytes(g.growth_bytes)} over "
                   f"{len(g.per_step_bytes)} steps: something keeps them across steps (a list of losses or "
                   "outputs holding their graph: append loss.item() or loss.detach()).")
    ratio = _request_sizes_grow(snap, r.device, r.groups[0].where if r.groups else "", step_ends)
    if ratio >= 1.5:
        out.append(f"Growing batch: the allocations at {r.groups[0].where} grew {ratio:.0f}x from the first step "
                   "to the failing one: the batch (or sequence length) grows every step; cap it.")
    act = r.kinds.get("activations", 0) + r.kinds.get("backward", 0)
    if act >= 0.5 * live and not r.growth:
        out.append(f"Activations: {fmt_bytes(act)} ({100 * act / live:.0f} % of live memory) are forward "
                   "activations and backward buffers: activation checkpointing (torch.utils.checkpoint), a "
                   "smaller micro-batch with gradient accumulation, or bf16 autocast.")
    opt = r.kinds.get("optimizer state", 0)
    if opt >= 0.3 * live:
        out.append(f"Optimizer state: {fmt_bytes(opt)} ({100 * opt / live:.0f} % of live memory): a fused or "
                   "8-bit optimizer (bitsandbytes AdamW8bit), or shard it with FSDP / ZeRO.")
    if not out:
        if not r.history:
            out.append("Record with --memory-history (Run dialog: 'Record allocator history') to see which "
                       "allocation stacks filled the GPU.")
        out.append("Lower the batch size, or use activation checkpointing / bf16 autocast to leave headroom.")
    return OomReport(**{**{f: getattr(r, f) for f in r.__dataclass_fields__}, "suggestions": tuple(out)})
