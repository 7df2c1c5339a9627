"""Implicit host-sync call sites the runner recorded, as the source of sync findings in stack-less traces.

With with_stack off (the runner's default) a trace has no Python frames, so host_sync / pageable_memcpy
cannot name the user's line. The runner turns on torch.cuda.set_sync_debug_mode("warn") and records each
implicit sync site once (core/runner/child.py):
- trace metadata `ptprof_sync_sites` (prof.add_metadata_json, only in cycles where the list grew):
  [{"file", "line", "first_step", "via"?, "code", "lib_*"?}, ...]: file:line = the innermost user frame,
  "via" = torch's own file:line when the warning came from inside torch, lib_file / lib_line /
  lib_function / lib_label / lib_code = the innermost library frame when the sync happened inside
  library code (transformers, lightning, torch) the user's line called (core/runner/syncsite.py);
- events.jsonl: {"type": "sync", "rank", "file", "line", "step", "via"?, "lib_*"?, "message"}.
Neither says which op synced, so the op kind comes from the site's source line when the file is readable
here (`.item()`, `if t:`, `.nonzero()` / masks, `.cpu()`, `.to(...)`). A site is used only when it
matches the finding's op kind, or when it is the rank's only site (then every implicit sync is from it);
otherwise the candidates go into the evidence and the source stays null (no guessed lines).

Nothing named in a bundle is trusted: events.jsonl is streamed (a line longer than MAX_EVENT_LINE is
skipped, JSON depth is bounded), and a site's source file is read only when it is a regular file, only up
to the line needed, within MAX_SOURCE_BYTES (a `sync` event naming a 2 GB file or a FIFO reads nothing).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from core.rules.base import RuleContext, Source
from core.trace import event_names
from core.trace.safefile import loads_json_bounded, open_regular

MAX_EVENT_LINE = 1 << 20  # events.jsonl lines are < 1 KB
MAX_SOURCE_BYTES = 16 << 20  # a training script is KBs; a bigger "source" is read no further than this
MAX_SOURCE_LINE = 1 << 16

# op kinds; host_sync's cause ops map onto them, pageable copies are copy_h2d / copy_d2h
_OP_KIND = {"aten::item": "item", "aten::_local_scalar_dense": "item", "aten::is_nonzero": "branch",
            "aten::nonzero": "nonzero", "aten::masked_select": "nonzero", "aten::index": "nonzero",
            "aten::unique": "nonzero", "aten::_unique2": "nonzero", "aten::copy_": "copy_d2h",
            "aten::to": "copy_d2h", "aten::_to_copy": "copy_d2h", "aten::cpu": "copy_d2h"}
_PATTERNS = (
    ("item", re.compile(r"\.item\(\)|\b(float|int)\(|print\(")),
    ("branch", re.compile(r"^\s*(if|elif|while|assert)\b|\bbool\(")),
    ("nonzero", re.compile(r"nonzero|masked_select|unique\(|\[[^\]]*(>|<|==|!=|mask)[^\]]*\]")),
    ("copy_d2h", re.compile(r"\.cpu\(\)|\.numpy\(\)|\.tolist\(\)|\.to\(\s*['\"]cpu|print\(")),
    ("copy_h2d", re.compile(r"\.to\((?!\s*['\"]cpu)|\.cuda\(")),
)


@dataclass(frozen=True, slots=True)
class SyncSite:
    file: str
    line: int
    first_step: int | None
    via: str | None  # torch's file:line behind the user's call (e.g. Module.to), None for a direct call
    kinds: frozenset[str] | None  # op kinds the line can sync with, None when the source is not readable
    function: str = ""  # enclosing def when the source is readable
    library: str = ""  # innermost library frame, "transformers/trainer.py:2375 in _maybe_log_save_evaluate"

    @property
    def source(self) -> Source:
        return Source(self.file, self.line, self.function, self.library)

    def label(self) -> str:
        return f"{self.library} <- {self.file}:{self.line}" if self.library else f"{self.file}:{self.line}"


def op_kind(op: str) -> str | None:
    return _OP_KIND.get(op)


def kinds_of(code: str) -> frozenset[str]:
    code = code.split("#", 1)[0]
    return frozenset(k for k, rx in _PATTERNS if rx.search(code))


def _records(ctx: RuleContext, rank: int) -> list[dict]:
    out: list[dict] = []
    for m in ctx.models:
        if m.rank != rank:
            continue
        raw = m.meta.extra.get("ptprof_sync_sites")
        if isinstance(raw, str):
            try:
                raw = loads_json_bounded(raw)
            except ValueError:
                raw = None
        out.extend(d for d in (raw if isinstance(raw, list) else ()) if isinstance(d, dict))
    if Path(ctx.trace_set.path).is_dir():  # a bundle: sites first seen after the last metadata write are only here
        out.extend(e for e in _bundle_events(ctx) if e.get("rank", 0) == rank)
    return out


def _bundle_events(ctx: RuleContext) -> list[dict]:
    def read() -> list[dict]:
        path = Path(ctx.trace_set.path) / "events.jsonl"
        events = []
        try:
            with open_regular(path) as fh:
                while line := fh.readline(MAX_EVENT_LINE):
                    if len(line) >= MAX_EVENT_LINE and not line.endswith(b"\n"):
                        while (rest := fh.readline(MAX_EVENT_LINE)) and not rest.endswith(b"\n"):
                            pass  # an oversized line: skipped whole
                        continue
                    if b'"sync"' not in line:
                        continue
                    try:
                        e = loads_json_bounded(line.decode("utf-8", errors="replace"))
                    except ValueError:
                        continue
                    if isinstance(e, dict) and e.get("type") == "sync":
                        events.append(e)
        except OSError:
            pass
        return events
    return ctx.memoized("bundle-sync-events", read)


def sites(ctx: RuleContext, rank: int) -> list[SyncSite]:
    """The rank's user-code sync sites in discovery order (library frames, e.g. an old runner's
    torch/_inductor sites, dropped)."""
    def build() -> list[SyncSite]:
        seen: dict[tuple[str, int, str], SyncSite] = {}
        known = _compile_frames(ctx)
        for d in _records(ctx, rank):
            try:
                file, line = str(d["file"]), int(d["line"])
            except (KeyError, TypeError, ValueError):
                continue
            library = d.get("lib_label") if isinstance(d.get("lib_label"), str) else ""
            # one user line (`trainer.train()`) can hold many library sync sites
            if (file, line, library) in seen or (event_names.is_library_frame(file) and not library):
                continue
            step = d.get("first_step", d.get("step"))
            kinds = _kinds(d, file, line)
            lib_kinds = kinds_of(d["lib_code"]) if isinstance(d.get("lib_code"), str) else frozenset()
            if lib_kinds:
                kinds = lib_kinds | (kinds or frozenset())
            seen[(file, line, library)] = SyncSite(file, line, step if isinstance(step, int) else None,
                                                   d.get("via") or None, kinds,
                                                   _function(file, line) or known.get((file, line), ""), library)
        return list(seen.values())
    return ctx.memoized(f"sync-sites:{rank}", build)


def _kinds(d: dict, file: str, line: int) -> frozenset[str] | None:
    if isinstance(d.get("op"), str):
        kind = op_kind(d["op"])
        return frozenset({kind}) if kind else None
    code = d.get("code")
    if not isinstance(code, str):
        lines = source_lines(file, line)
        code = lines[line - 1] if 0 < line <= len(lines) else None
    return kinds_of(code) if isinstance(code, str) and code.strip() else None


def _compile_frames(ctx: RuleContext) -> dict[tuple[str, int], str]:
    """(file, line) -> function of the user frames compile.json names (graph breaks' innermost frames)."""
    from core.rules import compile_info
    return {(b.source.file, b.source.line): b.source.function
            for b in compile_info.graph_breaks(ctx.trace_set.compile_info) if b.source and b.source.function}


_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)")


def _function(file: str, line: int) -> str:
    """Name of the def enclosing `line` (module level: "<module>"), "" when the file is not readable here."""
    lines = source_lines(file, line)
    if not 0 < line <= len(lines):
        return ""
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for text in reversed(lines[:line - 1]):
        body = text.strip()
        if not body or body.startswith(("#", "@", ")", "]", "}")):
            continue
        ind = len(text) - len(text.lstrip())
        if ind < indent:  # an enclosing block: a def ends the search, a for/if/with narrows it
            m = _DEF.match(text)
            if m:
                return m.group(2)
            indent = ind
    return "<module>"


def source_lines(file: str, upto: int) -> list[str]:
    """The first `upto` lines of `file` (fewer at its end), read fresh each analysis (the script may have
    been edited); [] when it is not a regular file or the line lies beyond MAX_SOURCE_BYTES."""
    if not 0 < upto <= MAX_SOURCE_BYTES:
        return []
    out: list[str] = []
    read = 0
    try:
        with open_regular(file) as fh:
            while len(out) < upto and read < MAX_SOURCE_BYTES:
                raw = fh.readline(MAX_SOURCE_LINE)
                if not raw:
                    break
                read += len(raw)
                out.append(raw.decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return []
    return out if len(out) >= upto or read < MAX_SOURCE_BYTES else []


def match(ctx: RuleContext, index: int, kind: str | None) -> tuple[Source | None, dict]:
    """(source, facts) for a finding of op `kind` in model `index` whose trace has no stacks: facts name the
    recorded sites (`sync_sites`: "file:line", "... via torch/nn/modules/module.py:1340" when the call was made
    inside torch) and how they matched the op (`sync_sites_matched`: "by their line's op (item)", "only site
    recorded" or "no (...)"); {} when the runner recorded none."""
    all_sites = sites(ctx, ctx.models[index].rank)
    if not all_sites or kind is None:
        return None, {}
    hits = [s for s in all_sites if s.kinds is not None and kind in s.kinds]
    if hits:
        hits.sort(key=lambda s: s.via is not None)  # a direct call before one made inside torch (Module.to)
        labels = [f"{s.label()} via {s.via}" if s.via else s.label() for s in hits[:10]]
        return hits[0].source, {"sync_sites_matched": f"by their line's op ({kind})", "sync_sites": labels}
    if len(all_sites) == 1 and all_sites[0].kinds is None:
        s = all_sites[0]  # the program's only implicit sync site: every implicit sync comes from it
        return s.source, {"sync_sites_matched": "only site recorded", "sync_sites": [s.label()]}
    unknown = [s for s in all_sites if s.kinds is None]
    if not unknown:
        return None, {}
    return None, {"sync_sites_matched": "no (source not readable here, op unknown)",
                  "sync_sites": [s.label() for s in unknown[:10]]}
