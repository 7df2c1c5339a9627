"""Details of one finding as HTML: cost, source, fix and the evidence events."""
from __future__ import annotations

import html
import re

from PySide6 import QtWidgets

from core import units
from core.rules.base import Finding
from core.trace.query import short_kernel_name

MAX_EVIDENCE_ROWS = 20
NAME_CHARS = 44  # evidence names longer than this are shortened (short_kernel_name, then cut)


def finding_html(f: Finding) -> str:
    e = html.escape
    parts = [f"<h3>{e(f.title)}</h3>",
             f"<p><b>{e(f.severity.label)}</b>{' (hint)' if f.hint else ''} · rule <code>{e(f.rule)}</code> · "
             f"cost {e(units.fmt_ns(f.impact_ns))} ({f.impact_pct:.1f} % of step time) · {f.count}×</p>"]
    if f.saving_ns is not None:
        from gui.issues.model import saving_label
        parts.append(f"<p><b>If fixed:</b> {e(saving_label(f))} · <i>{e(f.estimate)}</i></p>")
    if f.source:
        lib = f"<code>{e(f.source.library)}</code> &larr; " if getattr(f.source, "library", "") else ""
        parts.append(f"<p><b>Source:</b> {lib}<code>{e(f.source.file)}:{f.source.line}</code> in "
                     f"<code>{e(f.source.function)}</code></p>")
    else:
        parts.append("<p><b>Source:</b> <i>not in the trace (record with with_stack=True)</i></p>")
    parts.append(f"<p><b>Fix:</b> {e(f.fix)}</p>")
    if f.evidence:
        keys: list[str] = []
        for ev in f.evidence[:MAX_EVIDENCE_ROWS]:
            keys.extend(k for k in ev if k not in keys and k not in ("row", "rank"))
        # no cell wraps (a kernel name wrapped a few characters per line gave 90 px rows): names are
        # shortened to NAME_CHARS instead, which fits a dock of ~450 px beside the numbers
        head = "".join(f"<th align='left' style='white-space:nowrap'>{e(_label(k))}</th>" for k in keys)
        rows = []
        for ev in f.evidence[:MAX_EVIDENCE_ROWS]:
            cells = "".join(f"<td style='white-space:nowrap'>{e(_fmt(k, ev.get(k)))}</td>" for k in keys)
            rows.append(f"<tr>{cells}</tr>")
        parts.append(f"<p><b>Evidence</b> ({len(f.evidence)} shown, {len(f.evidence_rows)} events highlighted)</p>"
                     f"<table width='100%' cellspacing='0' cellpadding='3' border='1'><tr>{head}</tr>"
                     f"{''.join(rows)}</table>")
    return "\n".join(parts)


def _fmt(key: str, value) -> str:
    if value is None:
        return ""
    if key.endswith("_ns") and isinstance(value, (int, float)):
        return units.fmt_ns(value)
    if key.endswith("bytes") and isinstance(value, (int, float)):
        return units.fmt_bytes(value)
    text = str(value)
    if key == "name" and len(text) > NAME_CHARS:
        text = short_kernel_name(text)
        return text if len(text) <= NAME_CHARS else text[:NAME_CHARS - 1] + "…"
    return text if len(text) <= 160 else text[:157] + "…"


def _label(key: str) -> str:
    """Column header: units go into the cells (formatted), so drop the suffix: dur_ns -> dur."""
    for suffix in ("_ns", "_bytes"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return key.replace("_", " ")


_RANK_PREFIX = re.compile(r"^rank (\d+): ")


def not_run_groups(not_run) -> list[tuple[str, str, str]]:
    """(rule, "ranks 0, 1" or "", reason): a check skipped for the same reason on every rank of a
    multi-rank trace is listed once, with its ranks."""
    groups: dict[tuple[str, str], list[str]] = {}
    for n in not_run:
        m = _RANK_PREFIX.match(n.reason)
        reason = n.reason[m.end():] if m else n.reason
        groups.setdefault((n.rule, reason), [])
        if m:
            groups[(n.rule, reason)].append(m.group(1))
    merged: dict[tuple[str, str], list[str]] = {}  # checks skipped for one reason on the same ranks
    for (rule, reason), ranks in groups.items():
        where = "" if not ranks else ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(ranks)
        merged.setdefault((where, reason), []).append(rule)
    return [(", ".join(rules), where, reason) for (where, reason), rules in merged.items()]


def not_run_text(not_run) -> str:
    return "; ".join(f"{rule}{f' ({where})' if where else ''}: {reason}" for rule, where, reason in not_run_groups(not_run))


def not_run_html(not_run) -> str:
    if not not_run:
        return ""
    e = html.escape
    items = "".join(f"<li><code>{e(rule)}</code>{f' ({e(where)})' if where else ''}: {e(reason)}</li>"
                    for rule, where, reason in not_run_groups(not_run))
    return f"<p><b>Checks not run on this trace</b></p><ul>{items}</ul>"


class FindingDetails(QtWidgets.QTextBrowser):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText("Select a finding to see its evidence, source and fix.")

    def show_finding(self, f: Finding | None, not_run=()) -> None:
        self.setHtml(finding_html(f) if f is not None else not_run_html(not_run))
