"""TryController: the Issues panel's "Try it" (Details button and the table's Try column).

1. The finding's switch is checked against the run it came from (core.tryfix.plan.precheck): a switch that
   cannot apply is said in the Issues panel's status line before anything runs.
2. The bundle's recorded command runs twice through the Run dock (live plots, console, Stop; the `start_run`
   it is given: RunPanel.start(cfg, open_when_done=False)): once as recorded (the baseline), once with the
   switch on, both with the window at the end (core.tryfix.plan.timing_schedule). A switch that does not take stops its run
   at the second step; the Run dock and the Issues status say why.
3. The measurement (core.tryfix.session.result: unprofiled steps of both runs, Mann-Whitney + bootstrap
   interval) runs in a worker; it is stored in the before bundle's tried.json, so the finding shows
   "Measured" from then on.
4. A Compare of baseline vs after opens (gui/compare, status-bar progress and Cancel) with the verdict on top.

It reads the window's session (core/session.py), never a panel: the current tab's trace and its findings
(`session.trace_set`, `session.analysis_for`), whether the Run dock is busy (`session.run_in_progress`) and
how each run ended (the "run" event's "finished": `Run.bundle`, `Run.runner`, handed to `on_run_changed`).
gui/subscriptions.py `connect_try` links it: the session's "run" event, the Issues panel's Try requests, its
status line and its "Measured" (re-read once a try is measured).
"""
from __future__ import annotations

import html
import logging
from pathlib import Path

from PySide6 import QtCore
from superqt.utils import create_worker

from core.runner.config import ConfigError

log = logging.getLogger(__name__)


def verdict_html(entry: dict) -> str:
    """The Compare tab's banner: 'Try it: pin_memory — predicted −4.30 ms/step (−15.0 %), measured …'."""
    from core.commands.tryfix import detail, verdict
    sig = entry.get("significant")
    colour = "#2e7d32" if sig and (entry.get("measured_saving_ns") or 0) > 0 else \
        "#c62828" if sig else "#8a6d00"
    return (f"<span style='font-size:115%'><b>Try it: {html.escape(entry['fix'])}</b> — "
            f"<b style='color:{colour}'>{html.escape(verdict(entry))}</b></span><br>"
            f"<span>{html.escape(detail(entry))}</span>")


class TryController(QtCore.QObject):
    sig_message = QtCore.Signal(str)  # one line for the user (refusal, failure, progress)
    sig_measured = QtCore.Signal(dict)  # the stored entry (core.tryfix.session.result), before the Compare opens

    def __init__(self, session, start_run, compare, parent=None) -> None:
        """`session`: the window's core.session.Session; `start_run(cfg) -> bool`: start a RunConfig through
        the Run dock, its bundle not opened as a tab; `compare`: gui.compare.wiring.CompareActions."""
        super().__init__(parent)
        self.session, self.start_run, self.compare = session, start_run, compare
        self._pending = None  # (before, spec, out dir) of the run in progress
        self._worker = None
        self.last_entry: dict | None = None
        compare.sig_compare_shown.connect(self._on_compare_shown)
        self._verdict_for: tuple[str, str] | None = None

    @property
    def busy(self) -> bool:
        return self._pending is not None or self._worker is not None

    def try_fix(self, spec: str) -> bool:
        """Start trying `spec` on the current tab's run. False (and a message) when it cannot."""
        from core.tryfix import plan
        from core.tryfix.session import config_for, plan_runs
        if self.busy or self.session.run_in_progress:
            self.sig_message.emit("A run is in progress: stop it or wait for it before trying another fix.")
            return False
        ts = self.session.trace_set
        analysis = self.session.analysis_for(ts)
        if ts is None or analysis is None:
            self.sig_message.emit("Try it needs the run's findings: wait for the analysis to finish.")
            return False
        try:
            before = plan.load_before(ts.path, trace_set=ts, analysis=analysis.to_json())
        except plan.TryError as exc:
            self.sig_message.emit(f"Try it: {exc}")
            return False
        why = plan.precheck(before, spec)
        if why:
            self.sig_message.emit(f"Try it cannot apply {spec}: {why}")
            return False
        runs = plan_runs(before, [spec], 1)  # the baseline (no switch), then the fix: both timed the same way
        try:
            configs = [config_for(before, r) for r in runs]
        except ConfigError as exc:
            self.sig_message.emit(f"Try it: {exc}")
            return False
        self._pending = {"before": before, "spec": spec, "queue": list(zip(runs, configs)), "done": []}
        return self._next()

    def _next(self) -> bool:
        p = self._pending
        planned, cfg = p["queue"].pop(0)
        p["current"] = planned
        what = "the baseline (no switch)" if not planned.spec else f"with {planned.spec} on"
        self.sig_message.emit(f"Trying {p['spec']}: running {Path(cfg.script).name or cfg.target} {what} "
                              f"(step {len(p['done']) + 1} of {len(p['done']) + len(p['queue']) + 1}; Run dock: "
                              "live plots, Stop)…")
        if not self.start_run(cfg):
            self._pending = None
            return False
        return True

    def on_run_changed(self, run, change: str) -> None:
        """The session's "run" event (gui/subscriptions.py connect_try): a try's run that finished is
        checked (core.tryfix.session.outcome of `run.runner`), then the next run starts or both are measured."""
        p = self._pending
        if change != "finished" or p is None or "current" not in p or run.bundle is None \
                or Path(run.bundle).resolve() != Path(p["current"].out).resolve():
            return
        from core.tryfix.session import outcome
        status, message = outcome(run.runner) if run.runner is not None else \
            ("failed", f"the run ended (exit {run.exit_code}) without its record")
        planned = p.pop("current")
        if status != "ok":
            self._pending = None
            what = "the baseline run" if not planned.spec else planned.spec
            self.sig_message.emit(f"Try it: {p['spec']}: {what}: {message}")
            return
        p["done"].append(planned)
        if p["queue"]:
            self._next()
            return
        self.sig_message.emit(f"Trying {p['spec']}: measuring…")
        baselines = [r.out for r in p["done"] if not r.spec]
        afters = [r.out for r in p["done"] if r.spec]
        p["pair"] = (baselines[0], afters[0])
        self._worker = create_worker(_measure_job, p["before"], p["spec"], afters, baselines, _start_thread=False,
                                     _connect={"returned": self._on_measured, "errored": self._on_measure_failed})
        self._worker.start()

    def _on_measured(self, entry: dict) -> None:
        p = self._pending
        self._pending, self._worker = None, None
        self.last_entry = entry
        from core.commands.tryfix import verdict
        self.sig_message.emit(f"Tried {p['spec']}: {verdict(entry)}")
        self.sig_measured.emit(entry)  # the Issues panel re-reads tried.json (connect_try)
        a, b = p["pair"]
        self._verdict_for = (str(a), str(b))
        self.compare.compare_paths(str(a), str(b))

    def _on_measure_failed(self, exc: BaseException) -> None:
        spec = self._pending["spec"] if self._pending else "?"
        self._pending, self._worker = None, None
        log.warning("try measurement failed: %r", exc)
        self.sig_message.emit(f"Try it: {spec}: could not measure ({type(exc).__name__}: {exc})")

    def _on_compare_shown(self, view) -> None:
        if self._verdict_for is None or self.last_entry is None:
            return
        a, b = self._verdict_for
        paths = (str(Path(view.side_a.trace_set.path).resolve()), str(Path(view.side_b.trace_set.path).resolve()))
        if paths == (str(Path(a).resolve()), str(Path(b).resolve())):
            view.set_verdict(verdict_html(self.last_entry))
            self._verdict_for = None


def _measure_job(before, spec, afters, baselines):
    from core.tryfix.session import result
    return result(before, spec, list(afters), list(baselines))


def install(win, session, start_run, compare) -> TryController:
    """The window's Try it controller; its messages go to the status bar (and, by connect_try, to the
    Issues panel's status line)."""
    controller = TryController(session, start_run, compare, win)
    controller.sig_message.connect(lambda text: win.statusBar().showMessage(text, 30_000))
    return controller
