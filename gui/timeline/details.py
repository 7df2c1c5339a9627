"""Details of the selected slice: its args, op call chain, Python stack and launch links ("go to")."""
from __future__ import annotations

import html
import json

import numpy as np
import shiboken6
from PySide6 import QtCore, QtWidgets
from superqt.utils import create_worker

from core.trace import query
from core.trace.model import NONE, FlowKind, Kind, TraceModel
from core.trace.rawevent import read_event
from core.units import fmt_bytes, fmt_ns

_MAX_LINKS = 30


def _link(mi: int, row: int, text: str) -> str:
    return f'<a href="goto:{mi}:{row}">{html.escape(text)}</a>'


def slice_details_html(m: TraceModel, mi: int, row: int) -> str:
    s = m.slices
    kind = Kind(int(s.kind[row]))
    out = [f"<h3 style='margin:2px'>{html.escape(m.name(row))}</h3>",
           f"<p>{kind.name.lower()} on <b>{html.escape(m.track_label(int(s.track[row])))}</b><br>"
           f"start {fmt_ns(s.ts_ns[row])} · duration <b>{fmt_ns(s.dur_ns[row])}</b></p>"]
    args = []
    for label, col in (("correlation", "correlation"), ("external id", "external_id"), ("stream", "stream"),
                       ("device", "device"), ("sequence", "seq"), ("registers", "registers")):
        v = int(s.at(col, row))
        if v != NONE:
            args.append((label, str(v)))
    if s.at("bytes", row) != NONE:
        args.append(("bytes", fmt_bytes(s.at("bytes", row))))
    if not np.isnan(s.at("occupancy", row)):
        args.append(("est. occupancy", f"{float(s.at('occupancy', row)):.1f} %"))
    for label, col in (("grid", "grid"), ("block", "block"), ("input dims", "input_dims"),
                       ("input strides", "input_strides"), ("input types", "input_types"),
                       ("call stack", "call_stack")):
        text = m.strings[s.at(col, row)]
        if text:
            args.append((label, text))
    if args:
        out.append("<table cellspacing=2>" + "".join(
            f"<tr><td><i>{html.escape(k)}</i></td><td>{html.escape(v[:400])}</td></tr>" for k, v in args) + "</table>")
    if kind in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET):
        src = query.launcher_of(m, row)
        if src >= 0:
            chain = query.cpu_ancestors(m, src)
            op = m.name(chain[-1]) if chain else m.name(src)
            out.append(f"<p><b>Launched by</b> {_link(mi, src, m.name(src))} in {html.escape(op)}</p>")
            row_for_stack = src
        else:
            row_for_stack = -1
    else:
        row_for_stack = row
        launched = query.launched_by(m, row)
        if len(launched):
            items = "".join(f"<li>{_link(mi, int(d), query.short_kernel_name(m.name(int(d))))} "
                            f"({fmt_ns(s.dur_ns[int(d)])})</li>" for d in launched[:_MAX_LINKS])
            more = f"<li>… {len(launched) - _MAX_LINKS} more</li>" if len(launched) > _MAX_LINKS else ""
            out.append(f"<p><b>GPU work launched</b> ({len(launched)})</p><ul>{items}{more}</ul>")
        f = m.flows
        for label, mine, other in (("Backward", f.src, f.dst), ("Forward", f.dst, f.src)):
            hit = np.flatnonzero((f.kind == FlowKind.FWD_BWD) & (mine == row))
            if len(hit):
                out.append(f"<p><b>{label}</b> " + ", ".join(_link(mi, int(other[i]), m.name(int(other[i])))
                                                           for i in hit[:8]) + "</p>")
        chain = query.cpu_ancestors(m, row)
        if chain:
            out.append("<p><b>Called from</b><br>" + " › ".join(_link(mi, c, m.name(c)) for c in chain[-8:]) + "</p>")
    if row_for_stack >= 0:
        frames = query.python_stack(m, row_for_stack)
        if frames:
            items = "".join(f"<li>{_link(mi, f, m.name(f))}</li>" for f in frames[:_MAX_LINKS])
            out.append(f"<p><b>Python stack</b> (innermost first)</p><ol>{items}</ol>")
    return "".join(out)


def raw_args_html(event: dict | None) -> str:
    """Every arg of the event as recorded in the file (the model keeps only those it uses)."""
    if event is None:
        return "<p style='color:gray'>All args: could not re-read this event from its file (moved or changed?).</p>"
    args = event.get("args") or {}
    if not isinstance(args, dict) or not args:
        return "<p style='color:gray'>All args: none recorded.</p>"
    rows = "".join(f"<tr><td><i>{html.escape(str(k))}</i></td><td>{html.escape(_arg_text(v)[:600])}</td></tr>"
                   for k, v in args.items())
    return f"<p><b>All args</b> (from the file)</p><table cellspacing=2>{rows}</table>"


def _arg_text(v) -> str:
    """An arg as text; floats rounded to what a reader needs (Kineto's "memory bandwidth (GB/s)" came out as
    12.846889893532301): 4 significant digits, one decimal from 100 up, integral floats without one."""
    if isinstance(v, str):
        return v
    return json.dumps(_rounded(v), separators=(", ", ": "))


def _rounded(v):
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")) or v.is_integer():
            return v
        return round(v, 1) if abs(v) >= 100 else float(f"{v:.4g}")
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    return v


_RUNNING: set = set()  # readers stay referenced until they finish, even if the panel goes away


class DetailsPanel(QtWidgets.QTextBrowser):
    sig_goto_requested = QtCore.Signal(int, int)  # (model index, slice row)
    sig_raw_args_shown = QtCore.Signal(int, int)  # (model index, slice row): the file's args are in

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.models: list[TraceModel] = []
        self._token = 0
        self._html = ""
        self.clear_selection()

    def set_models(self, models: list[TraceModel]) -> None:
        self.models = list(models)
        self.clear_selection()

    def clear_selection(self) -> None:
        self.setHtml("<p style='color:gray'>Click a slice on the timeline to see its details.</p>")

    def show_slice(self, mi: int, row: int) -> None:
        self._token += 1
        if row < 0 or mi >= len(self.models):
            self.clear_selection()
            return
        m = self.models[mi]
        self._html = slice_details_html(m, mi, row)
        offset = int(m.slices.at("src_offset", row))
        if offset < 0:  # loaded without the C scanner: the model's args are all there is
            self.setHtml(self._html)
            return
        self.setHtml(self._html + "<p style='color:gray'>All args: reading the event from its file…</p>")
        token = self._token
        worker = create_worker(read_event, m.path, offset, _start_thread=False,
                               _connect={"returned": lambda ev, t=token: self._on_reader_returned(t, mi, row, ev),
                                         "errored": lambda _e, t=token: self._on_reader_returned(t, mi, row, None)})
        worker.finished.connect(lambda w=worker: _RUNNING.discard(w))
        _RUNNING.add(worker)
        worker.start()

    def _on_reader_returned(self, token: int, mi: int, row: int, event) -> None:
        if not shiboken6.isValid(self) or token != self._token:
            return  # another slice was selected meanwhile
        bar = self.verticalScrollBar().value()
        self.setHtml(self._html + raw_args_html(event))
        self.verticalScrollBar().setValue(bar)
        self.sig_raw_args_shown.emit(mi, row)

    def _on_anchor_clicked(self, url) -> None:
        text = url.toString()
        if text.startswith("goto:"):
            _, mi, row = text.split(":")
            self.sig_goto_requested.emit(int(mi), int(row))
