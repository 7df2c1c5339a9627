"""A report's findings: core.rules' analysis wrapped with the note a report shows when the list is empty.

`run_rules(trace_set)` (one model) and `core.ranks.inset.collect_findings` (any set: rank by rank, then across
ranks) never raise for a failing rule engine: the report still gets written and says why its findings section
is empty (`FindingsResult.note`). core.export never imports core.ranks: callers with several ranks pass findings.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class FindingsResult:
    findings: tuple = ()  # Finding objects or their JSON dicts
    available: bool = False  # a rule engine ran
    note: str = ""  # why the list is empty / what went wrong, fit to show a user
    extra: dict = field(default_factory=dict)


def run_rules(trace_set) -> FindingsResult:
    """core.rules.analyze of a one-model set as a FindingsResult; never raises for a failing rule engine.
    A set of several models (ranks) is analyzed rank by rank and then across ranks by its caller
    (core.ranks.inset.collect_findings), which hands the findings in: core.ranks sits above core.export."""
    if len(getattr(trace_set, "models", ())) > 1:
        raise ValueError("a set of several ranks: pass its findings (core.ranks.inset.collect_findings)")
    from core.rules import analyze  # imported here: a report given its findings never loads the rules
    return guarded(analyze, trace_set)


def guarded(run, trace_set) -> FindingsResult:
    """`run(trace_set)` wrapped; an exception becomes the note a report shows with an empty findings list."""
    try:
        result = run(trace_set)
    except Exception as exc:  # noqa: BLE001 - a broken rule must not lose the rest of the report
        log.exception("rules failed")
        return FindingsResult(note=f"rules failed: {type(exc).__name__}: {exc}")
    return wrap(result)


def wrap(result) -> FindingsResult:
    """A rules result as a FindingsResult: core.rules' Analysis (findings + not_run), a list of Finding
    objects / JSON dicts, or a FindingsResult (returned as is)."""
    if isinstance(result, FindingsResult):
        return result
    found = getattr(result, "findings", result)
    findings = tuple(sorted(found or (), key=_sort_key))
    not_run = [(str(getattr(n, "rule", "")), str(getattr(n, "reason", n))) for n in getattr(result, "not_run", ())]
    return FindingsResult(findings=findings, available=True,
                          note="" if findings else "no problems found by the rules", extra={"not_run": not_run})


def _sort_key(f) -> tuple:
    """The app's order (core/analysis/vocab.py)."""
    from core.analysis.vocab import order_key
    return order_key(f)


def as_dict(f) -> dict:
    """A Finding (object, dataclass or dict) as the ARCHITECTURE.md JSON shape."""
    if isinstance(f, dict):
        d = dict(f)
    elif hasattr(f, "to_json"):
        d = dict(f.to_json())
    elif dataclasses.is_dataclass(f):
        d = {fl.name: getattr(f, fl.name) for fl in dataclasses.fields(f)}
    else:
        d = {k: getattr(f, k) for k in ("rule", "severity", "title", "count", "impact_ns", "impact_pct",
                                         "time_ranges", "evidence", "source", "fix", "saving_ns", "saving_pct",
                                         "estimate") if hasattr(f, k)}
    if not isinstance(f, dict) and hasattr(f, "model_index"):
        d.setdefault("model_index", int(f.model_index))  # to_json leaves the rank out
    sev = d.get("severity", "")
    name = None if isinstance(sev, str) else getattr(sev, "name", None)
    d["severity"] = (name or str(getattr(sev, "value", sev))).lower()
    d["source"] = _source(d.get("source"))
    d["time_ranges"] = [tuple(int(x) for x in r) for r in (d.get("time_ranges") or ())]
    d["evidence"] = [evidence_text(e) for e in (d.get("evidence") or ())]
    d["facts"] = dict(d.get("facts") or {})
    return d


def _source(src) -> dict | None:
    if src is None:
        return None
    if isinstance(src, dict):
        return src
    if isinstance(src, (tuple, list)) and len(src) >= 2:
        return {"file": src[0], "line": src[1], "function": src[2] if len(src) > 2 else ""}
    d = {k: getattr(src, k, None) for k in ("file", "line", "function")}
    if getattr(src, "library", ""):
        d["library"] = src.library
    return d


MAX_FACT_ITEMS = 12  # list values shown per fact (a run of 400 steps has 400 DataLoader shares)


def fact_label(key: str) -> str:
    """A fact's or evidence column's name as read: units go into the values, so gpu_kernel_ns -> "gpu kernel"."""
    for suffix in ("_ns", "_bytes", "_pct"):
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
            break
    return key.replace("_", " ")


def fact_value(key: str, value) -> str:
    """A fact's value in its unit (the key's suffix: _ns, _bytes, _pct); a list as "a, b, c" (the first
    MAX_FACT_ITEMS, then "… (N in all)")."""
    from core import units

    def one(v) -> str:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return "" if v is None else str(v)
        if key.endswith("_ns"):
            return units.fmt_ns(v)
        if key.endswith("bytes"):
            return units.fmt_bytes(v)
        if key.endswith("_pct"):
            return f"{v:g} %"
        return f"{v:g}" if isinstance(v, float) else str(v)

    if isinstance(value, (list, tuple)):
        shown = ", ".join(one(v) for v in value[:MAX_FACT_ITEMS])
        return shown + (f", … ({len(value)} in all)" if len(value) > MAX_FACT_ITEMS else "")
    return one(value)


def fact_items(facts) -> list[tuple[str, str]]:
    """(label, value) of each fact with a value, in the rule's order: the finding's summary line."""
    # a list after a colon, as in the app: "waiting ranks 0" read as a count of none (it is rank 0)
    return [(fact_label(k) + (":" if isinstance(v, (list, tuple)) else ""), fact_value(k, v))
            for k, v in (facts or {}).items() if v is not None and v != "" and v != []]


def facts_text(facts) -> str:
    """The summary line as text: "kernels 485 · gpu kernel 1.31 ms · runs 9" ("" without facts)."""
    return " · ".join(f"{label} {value}" for label, value in fact_items(facts))


def evidence_text(e) -> str:
    """One evidence item as a line: rules give dicts like {"name", "ts_ns", "dur_ns", "rank", "row", ...}."""
    if not isinstance(e, dict):
        return str(e)
    from core import units

    parts = [str(e["name"])] if e.get("name") else []
    if e.get("ts_ns") is not None:
        parts.append(f"at {int(e['ts_ns']) / 1e6:.3f} ms")
    if e.get("dur_ns") is not None:
        parts.append(f"for {units.fmt_ns(int(e['dur_ns']))}")
    for k, v in e.items():
        if k in ("name", "ts_ns", "dur_ns", "row", "rank") or v in (None, "", [], {}):
            continue
        if isinstance(v, (int, float)) and k.endswith("bytes"):
            v = units.fmt_bytes(v)
        elif isinstance(v, (int, float)) and k.endswith("_ns"):
            v = units.fmt_ns(v)
        parts.append(f"{k.removesuffix('_bytes').removesuffix('_ns').replace('_', ' ')} {v}")
    return " · ".join(parts)
