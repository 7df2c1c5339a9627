"""report.html: self-contained (nothing external), states the metadata, findings, steps, tables."""
from __future__ import annotations

import base64
import re

import numpy as np

from core.export import tables
from core.export.findings import FindingsResult
from core.export.writer import ReportOptions, write_report

EXTERNAL = [
    re.compile(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", re.I),
    re.compile(r"<script[^>]*\bsrc\s*=", re.I),
    re.compile(r"@import", re.I),
    re.compile(r"url\(\s*['\"]?\s*(?:https?:)?//", re.I),
    re.compile(r"<link[^>]*\brel\s*=\s*['\"]?(?:stylesheet|preload|prefetch|icon)", re.I),
    re.compile(r"<iframe|<object|<embed", re.I),
]


def assert_self_contained(page: str) -> None:
    for pat in EXTERNAL:
        hit = pat.search(page)
        assert hit is None, f"external reference: {page[max(0, hit.start() - 60):hit.end() + 60]!r}"
    for src in re.findall(r"""<img[^>]*\bsrc\s*=\s*['"]([^'"]+)""", page, re.I):
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    for href in re.findall(r"""\bhref\s*=\s*['"]([^'"]+)""", page, re.I):
        assert "/" not in href and ":" not in href, href  # only sibling files of the report


def test_report_without_renderer_is_complete_and_offline(trace_set, tmp_path):
    res = write_report(trace_set, tmp_path, renderer=None,
                       options=ReportOptions(findings=FindingsResult(note="rules unavailable in this test")))
    names = {p.name for p in res.files}
    assert {"kernels.csv", "ops.csv", "steps.csv", "findings.csv", "report.html"} <= names
    assert not any(n.endswith(".png") for n in names)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert_self_contained(page)
    assert "rules unavailable in this test" in page
    for section in ("Trace", "Findings", "Step breakdown", "Metrics", "Timeline", "Memory", "Top kernels", "Top ops"):
        assert f"<h2>{section}</h2>" in page
    assert "metrics.csv" in names
    m = trace_set.primary
    from core.analysis.metrics import rank_metrics
    rm = rank_metrics(m)
    if rm.mfu_pct is not None:  # headline card, steps table column and the Metrics section
        assert ">MFU<" in page and "<th class=num>MFU %</th>" in page and f"{rm.mfu_pct:.1f}" in page
    for p in m.meta.device_properties:
        assert p["name"] in page
    if m.meta.versions.get("cuda_runtime_version"):
        assert "runtime 13.0" in page  # the shared GPU traces were recorded with CUDA 13.0
    assert "profile_memory" in page and "record_shapes" in page
    kt = tables.kernels(trace_set)
    if len(kt):
        best = int(np.argmax(np.asarray(kt.data[kt.columns.index("total_us")])))
        top = str(kt.data[kt.columns.index("name")][best])
        assert top[:40].replace("<", "&lt;").replace(">", "&gt;") in page
    if len(trace_set.models) > 1:
        assert page.count("<th>rank</th>") >= 3  # steps, top kernels and top ops name the rank
    n_steps = sum(len(x.steps) for x in trace_set.models)
    assert page.count("<tr>") >= n_steps


def test_findings_section_shows_cost_source_evidence_fix(issues_set, tmp_path):
    m = issues_set.primary
    t0 = int(m.steps.ts_ns[0])
    finding = {"rule": "host_sync", "severity": "error", "title": "Host waits for the GPU <5×/step>", "count": 25,
               "impact_ns": 1_234_567, "impact_pct": 2.9, "time_ranges": [[t0, t0 + 1000]],
               "source": {"file": "train.py", "line": 42, "function": "train_step"},
               "evidence": ["aten::item → cudaStreamSynchronize"], "fix": "log every N steps"}
    write_report(issues_set, tmp_path, None, ReportOptions(findings=FindingsResult((finding,), True)))
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert_self_contained(page)
    assert "Host waits for the GPU &lt;5×/step&gt;" in page  # escaped, UTF-8
    assert "1.23 ms" in page and "2.9 %" in page
    assert "train.py" in page and ":42" in page and "train_step" in page
    assert "aten::item → cudaStreamSynchronize" in page and "log every N steps" in page
    assert f"{t0 / 1e6:.3f}" in page
    csv_text = (tmp_path / "findings.csv").read_text(encoding="utf-8")
    assert "host_sync" in csv_text and len(csv_text.strip().splitlines()) == 2


def test_cpu_only_report_has_no_gpu_parts(cpu_set, tmp_path):
    res = write_report(cpu_set, tmp_path, None, ReportOptions(findings=FindingsResult()))
    assert "gpu.png" in res.skipped and "nvml.csv" in res.skipped
    assert not (tmp_path / "nvml.csv").exists()
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "CPU only" in page and "<h2>GPU (NVML)</h2>" not in page and "GPU busy %" not in page


def test_findings_come_from_the_rules_when_present(issues_set, tmp_path):
    """With core.rules (rules branch) every finding lands in findings.csv and the page; without it the page says so."""
    import csv
    import importlib

    from core.export import findings

    fr = findings.run_rules(issues_set)
    res = write_report(issues_set, tmp_path, None, ReportOptions(findings=fr))
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert_self_contained(page)
    with open(tmp_path / "findings.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rules = importlib.import_module("core.rules")
    if not hasattr(rules, "analyze"):
        assert not fr.available and rows == [] and fr.note in page and res.findings_note == fr.note
        return
    analysis = rules.analyze(issues_set)
    assert fr.available and len(fr.findings) == len(analysis.findings) == len(rows) > 0
    wrapped = findings.wrap(analysis)  # what the GUI passes: the issues panel's Analysis object
    assert len(wrapped.findings) == len(analysis.findings)
    assert len(wrapped.extra["not_run"]) == len(analysis.not_run)
    assert {r["rule"] for r in rows} == {f.rule for f in analysis.findings}
    for f in analysis.findings:
        assert f"<code class=rule>{f.rule}</code>" in page
    sev = [findings.SEVERITY_ORDER[r["severity"]] for r in rows]
    assert sev == sorted(sev)  # errors first
