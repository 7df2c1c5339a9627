"""A finding's summary line and its evidence as HTML that fits the Details pane: no cell wraps, nothing
scrolls sideways.

Every evidence row of one finding has the same keys (issue 35: what used to be a summary row of its own shape,
launch_bound's kernels / gpu kernel / cpu launch / idle / runs, is `Finding.facts`), so the evidence is one
table: the columns with one value in every row become a line above it ("In all 20: cause aten::item"), the
columns empty in every row are left out. The facts are one line of text ("kernels 1005 · gpu kernel 931.01 µs
· …"); a fact that is a list of long texts (graph-break reasons, failed guards, sync sites) gets a list.

Widths are measured with the pane's font: numeric and short columns keep their width, long text columns
(names, annotations, shapes) share what is left and are elided: names in the middle after dropping
template arguments and namespaces (`vectorized_elementwise…FunctorOnSelf_add>`: start and end are what
tell kernels apart), other text at the end.
"""
from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence

from PySide6 import QtCore

from core.export.findings import MAX_FACT_ITEMS, fact_label, fact_value
from core.trace.query import short_kernel_name

MAX_EVIDENCE_ROWS = 20
SKIP_KEYS = ("row", "rank")  # row: a timeline index (clicking highlights it); rank: the title says it
CELL_PAD_PX = 10  # cellpadding 3 on each side + the 1 px borders
SHORT_COL_PX = 110  # a column this narrow is never elided (numbers, short names like aten::zero_)
MIN_TEXT_COL_PX = 70
LINE_NAME_CHARS = 80  # a name in a line of text (not a table cell) is shortened past this
_NAMESPACES = re.compile(r"^(?:[A-Za-z_]\w*::)+")

Measure = Callable[[str], int]  # text -> width in px with the pane's font
Elide = Callable[[str, int, QtCore.Qt.TextElideMode], str]  # (text, px, mode) -> elided text


def fmt_value(key: str, value) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key.endswith(("_ns", "bytes", "_pct")):
        return fact_value(key, value)
    text = str(value)
    if key == "name":  # whole: the table shortens it to its column (short_name), a line to LINE_NAME_CHARS
        return text
    return text if len(text) <= 160 else text[:157] + "…"


def label(key: str) -> str:
    """Column header: units go into the cells (formatted), so drop the suffix: dur_ns -> dur."""
    return fact_label(key)


def columns(evidence: Sequence[dict]) -> list[str]:
    """The table's columns: the rows' keys (one shape per finding) less `row` / `rank` and the columns empty
    in every row."""
    keys = list(dict.fromkeys(k for ev in evidence for k in ev if k not in SKIP_KEYS))
    return [k for k in keys if any(ev.get(k) not in (None, "") for ev in evidence)]


LIST_LINE_CHARS = 100  # a list fact longer than this as text becomes a bulleted list under its label


def facts_html(facts: dict) -> str:
    """The finding's summary line (Finding.facts): "kernels 1005 · gpu kernel 931.01 µs · runs 3"; a list of
    long texts (graph-break reasons, sync sites) as a list of its own under the line."""
    e = html.escape
    inline, lists = [], []
    for key, value in (facts or {}).items():
        if value is None or value == "" or value == []:
            continue
        text = fact_value(key, value)
        if isinstance(value, list) and len(text) > LIST_LINE_CHARS:
            items = "".join(f"<li>{e(fact_value(key, v))}</li>" for v in value[:MAX_FACT_ITEMS])
            more = f"<li>… {len(value) - MAX_FACT_ITEMS} more</li>" if len(value) > MAX_FACT_ITEMS else ""
            lists.append((e(fact_label(key)), f"<ul>{items}{more}</ul>"))
        else:  # a list after a colon: "waiting ranks 0" read as a count of none (it is rank 0)
            sep = ":" if isinstance(value, (list, tuple)) else ""
            inline.append(f"{e(fact_label(key))}{sep} <b>{e(text)}</b>")
    if not inline and not lists:
        return ""
    if not inline:  # the first list's label on the summary line
        name, items = lists.pop(0)
        return f"<p><b>Summary:</b> {name}:</p>{items}" + "".join(f"<p>{n}:</p>{i}" for n, i in lists)
    return f"<p><b>Summary:</b> {' · '.join(inline)}</p>" + "".join(f"<p>{n}:</p>{i}" for n, i in lists)


def short_name(text: str, px: int, measure: Measure, elide: Elide) -> str:
    """The full name when it fits, else without template arguments, then without namespaces, then
    elided in the middle."""
    if measure(text) <= px:
        return text
    text = short_kernel_name(text)
    if measure(text) <= px:
        return text
    head, sep, rest = text.partition("<")
    text = _NAMESPACES.sub("", head) + sep + rest
    return elide(text, px, QtCore.Qt.TextElideMode.ElideMiddle)


def _without_params(name: str) -> str:
    """'void ns::k<A, B>(int, float*)' -> 'ns::k<A, B>' (the signature's head, template arguments kept)."""
    s = name.strip().removeprefix("void ")
    depth = 0
    for i, ch in enumerate(s):
        depth += (ch == "<") - (ch == ">")
        if ch == "(" and depth <= 0 and i:
            return s[:i]
    return s


def display_names(names: list[str], px: int, measure: Measure, elide: Elide) -> list[str]:
    """short_name of each, except where two different names would read the same ("cutlass::Kernel2"
    for three GEMMs): those keep their template arguments, elided in the middle."""
    shown = [short_name(n, px, measure, elide) for n in names]
    full_of: dict[str, set[str]] = {}
    for n, d in zip(names, shown):
        full_of.setdefault(d, set()).add(n)
    for i, (n, d) in enumerate(zip(names, shown)):
        if len(full_of[d]) > 1:
            head, sep, rest = _without_params(n).partition("<")
            shown[i] = elide(_NAMESPACES.sub("", head) + sep + rest, px, QtCore.Qt.TextElideMode.ElideMiddle)
    return shown


def column_widths(natural: list[int], width_px: int, weights: list[float]) -> list[int]:
    """Natural widths when they fit; else short columns keep theirs and the long ones share the rest
    (by weight; a column needing less than its share keeps its natural width)."""
    if sum(natural) <= width_px:
        return list(natural)
    widths = list(natural)
    flexible = [i for i, w in enumerate(natural) if w > SHORT_COL_PX]
    room = width_px - sum(w for i, w in enumerate(natural) if i not in flexible)
    while flexible:
        total_weight = sum(weights[i] for i in flexible)
        share = {i: room * weights[i] / total_weight for i in flexible}
        fits = [i for i in flexible if natural[i] <= share[i]]
        if not fits:
            for i in flexible:
                widths[i] = max(MIN_TEXT_COL_PX, int(share[i]))
            break
        for i in fits:
            widths[i] = natural[i]
            room -= natural[i]
            flexible.remove(i)
    return widths


def _line(ev_cells: dict[str, str], keys: list[str]) -> str:
    """One row as text: "name: key value · key value" (wraps in the pane like any paragraph)."""
    e = html.escape
    name = ev_cells.get("name", "") if "name" in keys else ""
    if len(name) > LINE_NAME_CHARS:
        name = short_kernel_name(name)
        name = name if len(name) <= LINE_NAME_CHARS else name[: LINE_NAME_CHARS - 1] + "…"
    # a role says itself: "In all 5: what the straggler was doing" (was "role what the straggler was doing")
    rest = " · ".join(e(ev_cells[k]) if k == "role" else f"{e(label(k))} {e(ev_cells[k])}"
                      for k in sorted(keys, key=lambda k: k != "role") if k != "name" and ev_cells[k])
    return f"{e(name)}{': ' if name and rest else ''}{rest}"


def evidence_html(evidence: Sequence[dict], width_px: int, measure: Measure, elide: Elide,
                  bold_measure: Measure | None = None) -> str:
    """The evidence (the first MAX_EVIDENCE_ROWS rows, one shape) for a pane `width_px` wide: the columns with
    one value in every row as a line, the others as one table when they fit (long text elided), else one
    wrapped line per row."""
    e = html.escape
    bold = bold_measure or (lambda s: int(measure(s) * 1.1))
    rows = list(evidence[:MAX_EVIDENCE_ROWS])
    if not rows:
        return ""
    keys = columns(rows)
    cells = [{k: fmt_value(k, ev.get(k)) for k in keys} for ev in rows]
    out = []
    same = [k for k in keys if k != "name" and len(rows) > 1 and cells[0][k]
            and all(c[k] == cells[0][k] for c in cells)]
    if same:
        out.append(f"<p>In all {len(rows)}: {_line(cells[0], same)}</p>")
    keys = [k for k in keys if k not in same]
    natural = [max([bold(label(k))] + [measure(c[k]) for c in cells]) + CELL_PAD_PX for k in keys]
    budget = width_px - 2 * len(keys) - 4  # the layout rounds each column up
    flexible = [w for w in natural if w > SHORT_COL_PX]
    if sum(w for w in natural if w <= SHORT_COL_PX) + sum(min(w, 2 * SHORT_COL_PX) for w in flexible) > budget:
        # too many columns for the pane: a line per row rather than cells cut to a few characters
        out.append("<ul>" + "".join(f"<li>{_line(c, keys)}</li>" for c in cells) + "</ul>")
        return "\n".join(out)
    widths = column_widths(natural, budget, [2.0 if k == "name" else 1.0 for k in keys])
    head = "".join(f"<th align='left' style='white-space:nowrap'>{e(label(k))}</th>" for k in keys)
    for i, k in enumerate(keys):
        if widths[i] >= natural[i]:
            continue
        px = widths[i] - CELL_PAD_PX
        if k == "name":
            for c, text in zip(cells, display_names([c[k] for c in cells], px, measure, elide)):
                c[k] = text
        else:
            for c in cells:
                c[k] = elide(c[k], px, QtCore.Qt.TextElideMode.ElideRight)
    body = "".join("<tr>" + "".join(f"<td style='white-space:nowrap'>{e(c[k])}</td>" for k in keys) + "</tr>"
                   for c in cells)
    out.append(f"<table width='100%' cellspacing='0' cellpadding='3' border='1'><tr>{head}</tr>{body}</table>")
    return "\n".join(out)
