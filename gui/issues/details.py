"""Details of one finding as HTML: cost, source, fix, its summary line (facts) and the evidence events."""
from __future__ import annotations

import html
import re

from PySide6 import QtCore, QtGui, QtWidgets

from core.analysis import vocab
from core.analysis.vocab import one_off_text
from core.rules.base import Finding
from gui.issues.evidence import MAX_EVIDENCE_ROWS, Elide, Measure, evidence_html, facts_html


def finding_html(f: Finding, width_px: int = 480, measure: Measure | None = None, elide: Elide | None = None,
                 bold_measure: Measure | None = None, stacks: bool | None = None, measured: str = "") -> str:
    """The finding for a pane `width_px` wide; `measure` / `elide` use the pane's font (default: ~7 px a
    character, cut at the end). `stacks`: whether the trace has Python stacks (None: unknown), so a finding
    without a source line only asks for with_stack=True when the trace was recorded without it."""
    measure = measure or (lambda s: 7 * len(s))
    elide = elide or (lambda s, px, _mode: s if 7 * len(s) <= px else s[: max(1, px // 7 - 1)] + "…")
    e = html.escape
    once = one_off_text(f)
    cost = f"<b>{e(vocab.lost_text(f))}</b>" if once else f"{vocab.LOST} <b>{e(vocab.lost_text(f))}</b>"
    parts = [f"<h3>{e(f.title)}</h3>",
             f"<p><b>{e(f.severity.label)}</b>{' (hint)' if f.hint else ''} · rule <code>{e(f.rule)}</code> · "
             f"{cost} · {f.count}×</p>"]
    if f.saving_ns is not None:
        parts.append(f"<p><b>If fixed:</b> {vocab.SAVES} <b>{e(vocab.saves_text(f))}</b> · <i>{e(f.estimate)}</i></p>")
    if measured:  # what `ptprof try` / Try it measured for this finding's fix (the bundle's tried.json)
        parts.append(f"<p><b>Measured:</b> {e(measured)}</p>")
    if f.source:
        lib = f"<code>{e(f.source.library)}</code> &larr; " if getattr(f.source, "library", "") else ""
        parts.append(f"<p><b>Source:</b> {lib}<code>{e(f.source.file)}:{f.source.line}</code> in "
                     f"<code>{e(f.source.function)}</code></p>")
    elif stacks:
        parts.append("<p><b>Source:</b> <i>no line of your code above this in the recorded stacks (it runs in "
                     "library code or C++ only)</i></p>")
    elif stacks is None:
        parts.append("<p><b>Source:</b> <i>not in the trace</i></p>")
    else:
        parts.append("<p><b>Source:</b> <i>not in the trace (record with with_stack=True)</i></p>")
    parts.append(f"<p><b>Fix:</b> {e(f.fix)}</p>")
    if f.facts:
        parts.append(facts_html(f.facts))
    if f.evidence:
        shown = min(len(f.evidence), MAX_EVIDENCE_ROWS)
        parts.append(f"<p><b>Evidence</b> ({shown} of {len(f.evidence)} shown, {len(f.evidence_rows)} events "
                     f"highlighted)</p>" if shown < len(f.evidence) else
                     f"<p><b>Evidence</b> ({shown} shown, {len(f.evidence_rows)} events highlighted)</p>")
        parts.append(evidence_html(f.evidence, width_px, measure, elide, bold_measure))
    return "\n".join(parts)


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
    """The selected finding; its evidence tables are laid out for the pane's width (again on resize), so
    the pane never scrolls sideways."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText("Select a finding to see its evidence, source and fix.")
        # the tables are laid out for the width (evidence.py) and long unbroken text (a path) may break
        # anywhere: a sideways scroll bar would only ever show a rounding pixel
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWordWrapMode(QtGui.QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self._shown: tuple[Finding | None, tuple] = (None, ())
        self.stacks: bool | None = None  # the shown analysis' trace has Python stacks (set by the panel)
        self._width = -1  # text_width() the shown HTML was laid out for
        self._relayout = QtCore.QTimer(self, singleShot=True, interval=0)  # never setHtml inside a resize:
        self._relayout.timeout.connect(self._render)                       # the document doubled its text

    def show_finding(self, f: Finding | None, not_run=(), measured: str = "") -> None:
        self._shown = (f, tuple(not_run))
        self._measured = measured
        self._render(keep_scroll=False)

    def text_width(self) -> int:
        """Pixels a table may take: the viewport less the document margins and a vertical scroll bar
        (reserved even when hidden: showing it must not make the tables too wide)."""
        bar = self.verticalScrollBar()
        bar_px = 0 if bar.isVisible() else self.style().pixelMetric(QtWidgets.QStyle.PixelMetric.PM_ScrollBarExtent)
        return max(120, self.viewport().width() - bar_px - int(2 * self.document().documentMargin()) - 4)

    def _render(self, keep_scroll: bool = True) -> None:
        f, not_run = self._shown
        self._width = self.text_width()
        if f is None:
            self.setHtml(not_run_html(not_run))
            return
        fm = QtGui.QFontMetrics(self.font())
        bold_font = QtGui.QFont(self.font())
        bold_font.setBold(True)
        bfm = QtGui.QFontMetrics(bold_font)
        bar = self.verticalScrollBar().value() if keep_scroll else 0
        self.setHtml(finding_html(f, self.text_width(), fm.horizontalAdvance,
                                  lambda text, px, mode: fm.elidedText(text, mode, px), bfm.horizontalAdvance,
                                  stacks=self.stacks, measured=getattr(self, "_measured", "")))
        self.verticalScrollBar().setValue(bar)

    def resizeEvent(self, ev) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(ev)
        if self._shown[0] is not None and self.text_width() != self._width:
            self._relayout.start()
