"""torch.compile graph breaks and recompiles, with reasons and user frames -> compile.json (stdlib only).

Runs in the user's interpreter (imported by child.py by path). Two sources, whatever the torch has:
- the `graph_breaks` / `recompiles` log artifacts (torch._logging.set_logs), caught by a filter on
  torch's log handlers: exact reasons, guard failures and user frames. Kept off stderr unless the user
  set TORCH_LOGS themselves.
- torch._dynamo.utils.counters (in 2.13 a data-dependent branch lands in "unimplemented", not
  "graph_break"; there is no "recompiles" counter) - see ../shared/notes/runner.md.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
import time

_BREAK_AT = re.compile(r"Graph break.*? in user code at (?P<file>.+?):(?P<line>\d+)")
_REASON = re.compile(r"Graph Break Reason:\s*(?P<reason>.+)")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_RECOMPILE = re.compile(r"Recompiling function (?P<function>\S+) in (?P<file>.+?):(?P<line>\d+)")
_GUARD = re.compile(r"^\s*-\s*(?P<guard>.+)$")


class CompileCapture(logging.Filter):
    def __init__(self, quiet: bool, skip_dirs: tuple[str, ...] = ()):
        super().__init__()
        self.quiet = quiet
        self.skip_dirs = skip_dirs  # torch's and the runner's own folders: not user frames
        self.records: list[tuple[str, str, int]] = []  # (artifact, message, t_ns)

    @classmethod
    def install(cls, torch) -> "CompileCapture | None":
        user_logs = "TORCH_LOGS" in os.environ
        import runpy  # runpy.py is a file frame before 3.11 ("<frozen runpy>" after): not a user frame either
        cap = cls(quiet=not user_logs, skip_dirs=(os.path.dirname(torch.__file__) + os.sep,
                                                  os.path.dirname(os.path.abspath(__file__)) + os.sep,
                                                  os.path.abspath(runpy.__file__)))
        try:
            internal = torch._logging._internal
            if not user_logs:
                torch._logging.set_logs(graph_breaks=True, recompiles=True)
            for qname in internal.log_registry.get_log_qnames():
                for handler in logging.getLogger(qname).handlers:
                    handler.addFilter(cap)
        except Exception:  # older/newer torch without these internals: counters still work
            pass
        return cap

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        if not name.endswith(("__graph_breaks", "__recompiles")):
            return True
        if not getattr(record, "_ptprof_seen", False):
            record._ptprof_seen = True
            try:
                self.records.append((name.rsplit("__", 1)[1], record.getMessage(), time.time_ns()))
            except Exception:
                pass
        return not self.quiet

    # -- report ----------------------------------------------------------------------------------
    def report(self) -> dict:
        breaks: dict[tuple, dict] = {}
        recompiles: list[dict] = []
        for artifact, msg, t_ns in self.records:
            if artifact == "graph_breaks":
                b = parse_graph_break(msg, self.skip_dirs)
                key = (b["file"], b["line"], b["reason"])
                if key in breaks:
                    breaks[key]["count"] += 1
                    if not breaks[key]["user_frames"]:
                        breaks[key]["user_frames"] = b["user_frames"]
                else:
                    breaks[key] = {**b, "count": 1, "first_t_ns": t_ns}
            elif artifact == "recompiles":
                r = parse_recompile(msg)
                if r is not None:
                    recompiles.append({**r, "t_ns": t_ns})
        return {"graph_breaks": list(breaks.values()), "recompiles": recompiles, "counters": _counters(),
                "compile_times": _compile_times(),
                "source": "torch._logging graph_breaks,recompiles + torch._dynamo.utils.counters"}

    def write(self, path) -> None:
        counters = _counters()
        if not self.records and not counters.get("frames", {}).get("total"):
            return  # the script never compiled anything (torch.optim imports dynamo, so look at frames)
        path = str(path)  # the temp file: a unique name created exclusively (never a link planted in an old bundle)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=f".{os.path.basename(path)}.",
                                   suffix=".tmp")
        try:
            os.chmod(tmp, 0o644)
            with os.fdopen(fd, "w") as fh:
                json.dump(self.report(), fh, indent=1, default=str)
            os.replace(tmp, path)
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise


def parse_graph_break(msg: str, skip_dirs: tuple[str, ...] = ()) -> dict:
    m = _BREAK_AT.search(msg)
    r = _REASON.search(msg)
    frames = []
    lines = msg.splitlines()
    if "User code traceback:" in msg:
        start = next(i for i, ln in enumerate(lines) if "User code traceback:" in ln)
        for ln in lines[start + 1:]:
            f = _FRAME.match(ln)
            if f and not f["file"].startswith(("<", *skip_dirs)):
                frames.append({"file": f["file"], "line": int(f["line"]), "function": f["function"].strip()})
    reason = r["reason"].strip() if r else (lines[0].strip() if lines else "")
    explanation = next((ln.strip()[len("Explanation:"):].strip() for ln in lines
                        if ln.strip().startswith("Explanation:")), "")
    return {"file": m["file"] if m else (frames[-1]["file"] if frames else None),
            "line": int(m["line"]) if m else (frames[-1]["line"] if frames else None),
            "reason": reason, "explanation": explanation, "user_frames": frames, "text": msg[:4000]}


def parse_recompile(msg: str) -> dict | None:
    m = _RECOMPILE.search(msg)
    if not m:
        return None
    guards = [g["guard"].strip() for ln in msg.splitlines()[1:] if (g := _GUARD.match(ln))]
    return {"function": m["function"], "file": m["file"], "line": int(m["line"]), "reasons": guards}


def _compile_times() -> dict:
    """torch._dynamo.utils.compilation_time_metrics: phase -> {count, total_s, max_s} over the whole run
    (every compile and recompile, not only those in a trace window: the what-if amortises them over the run)."""
    utils = sys.modules.get("torch._dynamo.utils")
    metrics = getattr(utils, "compilation_time_metrics", None) if utils is not None else None
    out = {}
    try:
        for k, v in dict(metrics or {}).items():
            vals = [float(x) for x in list(v)[:100_000] if isinstance(x, (int, float))]
            if vals:
                out[str(k)[:200]] = {"count": len(vals), "total_s": round(sum(vals), 6), "max_s": round(max(vals), 6)}
    except Exception:
        return {}
    return out


def _counters() -> dict:
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None or not hasattr(utils, "counters"):
        return {}
    try:
        return {str(k): {str(kk): vv for kk, vv in dict(v).items()} for k, v in utils.counters.items()}
    except Exception:
        return {}
