"""Rank summaries kept next to their traces in a run bundle, so a later `analyze` of a 1,024-rank run only
reduces.

`<bundle>/.ptprof-summaries/<trace file name>.rank-summary` (not a trace name: discovery never takes it): the
map's `RankSummary` as JSON (never pickle: opening a bundle executes nothing), written by the launcher when the
run ends (core/commands/recording.py calls `core.ranks.run.summarise_bundle` in the launcher's process, which has
this package; the ranks' own interpreters run stdlib + torch only)
or by the first `analyze` of the bundle. A summary is used only when it was made from the trace as it is
now (size, mtime), by this code and these thresholds (the rules' digest) and for the same run shape (ranks);
anything else - unreadable, malformed, stale, too big - is a miss and the rank is mapped again.
Only run bundles get them: a plain folder of traces is the user's, not ours to write into.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from core.ranks.mapper import MapTask
from core.ranks.summary import RankSummary

log = logging.getLogger(__name__)

FOLDER = ".ptprof-summaries"
MAX_BYTES = 16 << 20  # a summary is 12-30 KB; anything this big is not one of ours


def _digest(task: MapTask) -> str:
    from core.ranks.findings_cache import _code
    return f"{_code()}:{task.world_hint}"


def path_of(task: MapTask) -> Path | None:
    if task.kind != "bundle" or not task.bundle_dir:
        return None
    return Path(task.bundle_dir) / FOLDER / (Path(task.path).name + ".rank-summary")


def load(task: MapTask) -> RankSummary | None:
    p = path_of(task)
    if p is None:
        return None
    try:
        from core.trace.safefile import read_regular
        raw = read_regular(p, MAX_BYTES, follow_symlinks=False)
    except (OSError, ValueError, Exception):  # noqa: BLE001 - absent or unreadable: a miss
        return None
    try:
        doc = _decode(raw)
        if not isinstance(doc, dict) or doc.get("digest") != _digest(task):
            return None
        s = RankSummary.from_json(doc["summary"])
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError):
        log.info("stored summary %s unusable: mapping the rank again", p)
        return None
    try:
        st = os.stat(task.path)
    except OSError:
        return None
    if s.source.get("size") != st.st_size or s.source.get("mtime_ns") != st.st_mtime_ns:
        return None
    return s


def _decode(raw: bytes):
    """JSON -> plain Python objects (msgspec is ~3x json's speed: a 1,024-rank reduce reads ~70 MB)."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - a dependency
        return json.loads(raw)
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None


def store(task: MapTask, summary: RankSummary, found=None) -> bool:
    """Write the summary into the bundle (temp file + rename); False when it is not a bundle or cannot."""
    p = path_of(task)
    if p is None:
        return False
    try:
        p.parent.mkdir(exist_ok=True)
        text = json.dumps({"digest": _digest(task), "summary": summary.to_json()}, separators=(",", ":"))
        fd, tmp = tempfile.mkstemp(prefix=".summary-", dir=p.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o644 & ~umask)  # mkstemp's 0600 would hide it from the cluster's other users
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except (OSError, TypeError, ValueError) as exc:
        log.info("could not store the rank summary %s: %s", p, exc)
        return False
    return True
