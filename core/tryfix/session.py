"""Running a try: the after runs (and, with runs > 1, fresh baseline runs) of a before bundle, one at a
time through the ordinary run machinery (core.runner.session.RunSession), then the measured result stored
in the before bundle's tried.json. Qt-free: `ptprof try` drives it in a loop, the GUI one run at a time
through its RunController (gui/tryfix/)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from core.runner.config import validate
from core.runner.switches import REFUSED_EXIT
from core.tryfix import store
from core.tryfix.measure import measure
from core.tryfix.plan import Before, after_config, fix_key, folder_name, predicted, timing_schedule, tries_dir


@dataclass(frozen=True)
class PlannedRun:
    spec: str  # "" = the before command again, no switch (a baseline repeat)
    run: int  # 1-based repeat index
    out: Path

    @property
    def label(self) -> str:
        what = self.spec or "baseline"
        return what if self.run == 1 else f"{what} (run {self.run})"


def plan_runs(before: Before, specs: list[str], runs: int) -> list[PlannedRun]:
    """Interleaved: round k runs the baseline (the recorded command, no switch) again, then each spec, all with
    the timing schedule (plan.timing_schedule: the window at the end, clean steps before it). The before
    bundle's own steps are not compared: most of them ran after its window. Interleaving spreads slow drifts of
    the machine over both sides."""
    root = tries_dir(before)
    out = []
    for k in range(1, max(1, runs) + 1):
        out.append(PlannedRun("", k, root / ("baseline" if k == 1 else f"baseline-{k}")))
        for spec in specs:
            out.append(PlannedRun(spec, k, root / (folder_name(spec) + ("" if k == 1 else f"-{k}"))))
    return out


def config_for(before: Before, planned: PlannedRun):
    return validate(after_config(before, planned.spec, planned.out, timing_schedule(before)))


def outcome(session) -> tuple[str, str]:
    """('ok' | 'refused' | 'failed' | 'stopped', one line) of a finished RunSession of a try."""
    code = session.exit_code
    if code == REFUSED_EXIT or (session.cfg.apply and any(s["status"] == "refused"
                                                           for s in store.read_switches(session.bundle.root))):
        refused = [f"{s['name']} cannot apply: {s['message']}" for s in store.read_switches(session.bundle.root)
                   if s["status"] == "refused"]
        return "refused", "; ".join(refused) or "a switch could not apply"
    if session.stopping_requested and not session.stopped_after_window:
        return "stopped", f"stopped (exit {code})"
    if code != 0 and not session.stopped_after_window:
        why = session.state.exception or "see stderr.log"
        return "failed", f"the script failed (exit {code}): {why.splitlines()[0] if why else ''}"
    if not session.bundle.trace_files():
        return "failed", "no trace was saved (too few steps for the schedule?)"
    pending = [s["name"] for s in store.read_switches(session.bundle.root) if s["status"] != "applied"]
    if session.cfg.apply and pending:
        return "refused", f"{', '.join(pending)}: not confirmed before the script ended (too few steps?)"
    return "ok", ""


def run_blocking(cfg, on_poll=None, should_stop=None, plan=None):
    """One RunSession to its end (the CLI). on_poll(session, update) after every poll; should_stop() -> True
    asks the run to stop the way Stop does."""
    from core.runner.process import StopPlan
    from core.runner.session import RunSession
    session = RunSession(cfg, plan=plan or StopPlan()).start()
    try:
        while not session.finished:
            up = session.poll()
            if on_poll is not None:
                on_poll(session, up)
            if should_stop is not None and should_stop() and not session.stopping_requested:
                session.request_stop()
            if not session.finished:
                time.sleep(0.1)
    finally:
        if not session.finished:
            session.stop_and_wait()
    return session


def result(before: Before, spec: str, afters: list[Path], baselines: list[Path], keep: bool = True,
           use_cache: bool = True) -> dict:
    """The JSON entry of one fix (`try --json` "fixes" item) measured from its after runs against the before
    run (+ baseline repeats); stored in the before bundle's tried.json when `keep`."""
    pred_ns, pred_pct, rules = predicted(before, spec) if spec else (None, None, [])
    m = measure(list(baselines) or [before.path], afters, use_cache=use_cache)
    entry = {"fix": fix_key(spec), "after": str(afters[0]) if afters else None,
             "baseline": str(baselines[0]) if baselines else str(before.path),
             "after_runs": [str(a) for a in afters], "baseline_runs": [str(b) for b in baselines],
             "rules": rules, "predicted_saving_ns": None if pred_ns is None else round(pred_ns),
             "predicted_pct": None if pred_pct is None else round(pred_pct, 3), "runs": len(afters),
             "status": "measured", "message": ""}
    entry |= m.to_json()
    if m.comparison.significant is None:
        entry["message"] = f"cannot tell from noise: {m.comparison.method}"
    if keep:
        store.write_tried(before.path, fix_key(spec), dict(entry, spec=fix_key(spec), after=[str(a) for a in afters]))
    return entry


def not_run(spec: str, status: str, message: str, before: Before | None = None) -> dict:
    """The JSON entry of a fix that was not measured (refused before or during its run, or failed)."""
    pred_ns, pred_pct, rules = predicted(before, spec) if before is not None else (None, None, [])
    return {"fix": fix_key(spec), "after": None, "after_runs": [], "baseline_runs": [], "rules": rules,
            "predicted_saving_ns": None if pred_ns is None else round(pred_ns),
            "predicted_pct": None if pred_pct is None else round(pred_pct, 3),
            "measured_saving_ns": None, "measured_pct": None, "ci_ns": None, "p_value": None, "significant": None,
            "status": status, "message": message}
