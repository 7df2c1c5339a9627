"""Details of one finding as HTML: cost, source, fix and the evidence events."""
from __future__ import annotations

import html

from PySide6 import QtWidgets

from core import units
from core.rules.base import Finding
from core.trace.query import short_kernel_name

MAX_EVIDENCE_ROWS = 20


def finding_html(f: Finding) -> str:
    e = html.escape
    parts = [f"<h3>{e(f.title)}</h3>",
             f"<p><b>{e(f.severity.label)}</b>{' (hint)' if f.hint else ''} · rule <code>{e(f.rule)}</code> · "
             f"cost {e(units.fmt_ns(f.impact_ns))} ({f.impact_pct:.1f} % of step time) · {f.count}×</p>"]
    if f.saving_ns is not None:
        from gui.issues.model import saving_label
        parts.append(f"<p><b>If fixed:</b> {e(saving_label(f))} · <i>{e(f.estimate)}</i></p>")
    if f.source:
        parts.append(f"<p><b>Source:</b> <code>{e(f.source.file)}:{f.source.line}</code> in "
                     f"<code>{e(f.source.function)}</code></p>")
    else:
        parts.append("<p><b>Source:</b> <i>not in the trace (record with with_stack=True)</i></p>")
    parts.append(f"<p><b>Fix:</b> {e(f.fix)}</p>")
    if f.evidence:
        keys: list[str] = []
        for ev in f.evidence[:MAX_EVIDENCE_ROWS]:
            keys.extend(k for k in ev if k not in keys and k not in ("row", "rank"))
        head = "".join(f"<th align='left'>{e(_label(k))}</th>" for k in keys)
        rows = []
        for ev in f.evidence[:MAX_EVIDENCE_ROWS]:
            cells = "".join(f"<td>{e(_fmt(k, ev.get(k)))}</td>" for k in keys)
            rows.append(f"<tr>{cells}</tr>")
        parts.append(f"<p><b>Evidence</b> ({len(f.evidence)} shown, {len(f.evidence_rows)} events highlighted)</p>"
                     f"<table cellspacing='0' cellpadding='3' border='1'><tr>{head}</tr>{''.join(rows)}</table>")
    return "\n".join(parts)


def _fmt(key: str, value) -> str:
    if value is None:
        return ""
    if key.endswith("_ns") and isinstance(value, (int, float)):
        return units.fmt_ns(value)
    if key.endswith("bytes") and isinstance(value, (int, float)):
        return units.fmt_bytes(value)
    text = str(value)
    if key == "name" and len(text) > 60:
        text = short_kernel_name(text)
        return text if len(text) <= 60 else text[:59] + "…"
    return text if len(text) <= 160 else text[:157] + "…"


def _label(key: str) -> str:
    """Column header: units go into the cells (formatted), so drop the suffix: dur_ns -> dur."""
    for suffix in ("_ns", "_bytes"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return key.replace("_", " ")


def not_run_html(not_run) -> str:
    if not not_run:
        return ""
    items = "".join(f"<li><code>{html.escape(n.rule)}</code>: {html.escape(n.reason)}</li>" for n in not_run)
    return f"<p><b>Checks not run on this trace</b></p><ul>{items}</ul>"


class FindingDetails(QtWidgets.QTextBrowser):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText("Select a finding to see its evidence, source and fix.")

    def show_finding(self, f: Finding | None, not_run=()) -> None:
        self.setHtml(finding_html(f) if f is not None else not_run_html(not_run))
