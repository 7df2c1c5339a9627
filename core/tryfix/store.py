"""tried.json in the BEFORE bundle: what `ptprof try` measured for each fix, read back by `analyze --json`
(`measured_saving_ns` and its interval on the findings the fix addresses), the report and the GUI.
switches.json in an AFTER bundle: what each runtime switch did (written by the child, switches.py).

    {"format": "ptprof-tried/1", "fixes": {"pin_memory": {"spec", "rules": [...], "after": [bundle, ...],
     "predicted_saving_ns", "measured_saving_ns", "ci_ns": [lo, hi], "p_value", "significant", "basis",
     "steps": [before, after], "step_ns": [before median, after median], "runs", "at"}}}

A saving is positive when the step got shorter. Both files are written by a fresh temp file + rename and
read as untrusted input (regular files only, bounded, every field type-checked).
"""
from __future__ import annotations

import math
from pathlib import Path

from core.runner.bundle import SWITCHES_JSON, TRIED_JSON, iso_utc, read_json

FORMAT = "ptprof-tried/1"
_NUM = (int, float)


def read_switches(bundle: str | Path) -> list[dict]:
    """switches.json of a bundle recorded with --apply: [{name, value, status, message}], [] when absent/bad."""
    data = read_json(Path(bundle) / SWITCHES_JSON)
    items = data.get("switches") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    out = []
    for s in items:
        if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("status"), str):
            out.append({"name": s["name"], "value": s.get("value") if isinstance(s.get("value"), str) else None,
                        "status": s["status"], "message": str(s.get("message", ""))[:2000]})
    return out


def _num(v):
    return v if isinstance(v, _NUM) and not isinstance(v, bool) and math.isfinite(v) else None


def _clean(entry: dict) -> dict | None:
    if not isinstance(entry, dict):
        return None
    ci = entry.get("ci_ns")
    ci = [float(ci[0]), float(ci[1])] if (isinstance(ci, list) and len(ci) == 2 and all(_num(x) is not None for x in ci)) \
        else None
    rules = [r for r in entry.get("rules", []) if isinstance(r, str)] if isinstance(entry.get("rules"), list) else []
    after = [a for a in entry.get("after", []) if isinstance(a, str)] if isinstance(entry.get("after"), list) else []
    sig = entry.get("significant")
    return {"spec": str(entry.get("spec", "")), "rules": rules, "after": after,
            "predicted_saving_ns": _num(entry.get("predicted_saving_ns")),
            "measured_saving_ns": _num(entry.get("measured_saving_ns")), "ci_ns": ci,
            "p_value": _num(entry.get("p_value")), "significant": sig if isinstance(sig, bool) else None,
            "basis": str(entry.get("basis", "")), "measured_pct": _num(entry.get("measured_pct")),
            "predicted_pct": _num(entry.get("predicted_pct")), "runs": _num(entry.get("runs")),
            "steps": [int(x) for x in entry["steps"]] if (isinstance(entry.get("steps"), list) and len(entry["steps"]) == 2
                                                          and all(_num(x) is not None for x in entry["steps"])) else None,
            "at": str(entry.get("at", ""))}


def read_tried(bundle: str | Path) -> dict[str, dict]:
    """fix key -> entry (see the module doc); {} when the bundle has no tried.json or it is not ours."""
    path = Path(bundle)
    if not path.is_dir():
        return {}
    data = read_json(path / TRIED_JSON)
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("fixes"), dict):
        return {}
    out = {}
    for key, entry in data["fixes"].items():
        clean = _clean(entry)
        if isinstance(key, str) and clean is not None:
            out[key] = clean
    return out


def write_tried(bundle: str | Path, key: str, entry: dict) -> Path:
    """Add / replace one fix's entry (atomic: a reader sees the old file or the new one)."""
    from core.runner.bundle import write_json
    fixes = read_tried(bundle)
    fixes[key] = dict(_clean(entry) or {}, at=iso_utc())
    path = Path(bundle) / TRIED_JSON
    write_json(path, {"format": FORMAT, "fixes": fixes})
    return path


def measured_for_rule(tried: dict[str, dict], rule: str) -> tuple[str, dict] | None:
    """The single-switch entry measured for a rule's fix (its own switch first, then an alternative)."""
    from core.tryfix.fixes import rules_for_switch, switch_for_rule
    own = (switch_for_rule(rule) or "").partition("=")[0]
    best = None
    for key, entry in tried.items():
        if "," in key or entry.get("measured_saving_ns") is None:
            continue  # a combination measures several fixes at once: not this finding's own
        name = key.partition("=")[0]
        if rule not in (entry.get("rules") or rules_for_switch(name)):
            continue
        if name == own:
            return key, entry
        best = best or (key, entry)
    return best


def annotate(findings: list[dict], tried: dict[str, dict]) -> list[dict]:
    """analyze --json findings with `measured_saving_ns`, `measured_ci_ns`, `measured_p_value`,
    `measured_significant`, `measured_fix` where `ptprof try` measured that finding's fix (in place)."""
    if not tried:
        return findings
    for f in findings:
        hit = measured_for_rule(tried, f.get("rule", ""))
        if hit is None:
            continue
        key, entry = hit
        f["measured_saving_ns"] = round(entry["measured_saving_ns"])
        f["measured_ci_ns"] = [round(x) for x in entry["ci_ns"]] if entry.get("ci_ns") else None
        f["measured_p_value"] = entry.get("p_value")
        f["measured_significant"] = entry.get("significant")
        f["measured_fix"] = key
    return findings


def measured_text(entry: dict, prefix: bool = True) -> str:
    """'measured -3.90 ms/step (-14.0 %, p = 0.004; 95 % interval 3.20-4.40 ms) with pin_memory'."""
    from core import units
    saving = entry.get("measured_saving_ns")
    if saving is None:
        return ""
    sign = "-" if saving > 0 else "+" if saving < 0 else "±"
    parts = []
    if entry.get("measured_pct") is not None:
        parts.append(f"{-entry['measured_pct']:+.1f} %")
    if entry.get("p_value") is not None:
        parts.append(p_text(entry["p_value"]))
    ci = entry.get("ci_ns") or entry.get("measured_ci_ns")
    if ci:
        parts.append(f"95 % interval of the saving {_ns(ci[0])} .. {_ns(ci[1])}")
    return f"{'measured ' if prefix else ''}{sign}{units.fmt_ns(abs(saving))}/step ({', '.join(parts)})"


def _ns(v: float) -> str:
    from core import units
    return ("-" if v < 0 else "") + units.fmt_ns(abs(v))


def tried_for(path) -> dict[str, dict]:
    """read_tried for anything a loader opened (a bundle folder or a plain file: {} for the latter)."""
    try:
        return read_tried(path) if path and Path(path).is_dir() else {}
    except OSError:
        return {}


def p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3g}"
