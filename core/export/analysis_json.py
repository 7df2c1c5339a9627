"""The `ptprof analyze --json` document: the Analysis' findings and summary, the health checks and the
metrics (also `ptprof.analyze(...).to_json()` in core/api.py, and the MCP server's source)."""
from __future__ import annotations


def json_doc(result, checks: list[dict], metrics) -> dict:
    """The document of `result` (an Analysis), the health `checks` (JSON) and the RankMetrics `metrics`."""
    doc = {"health": checks} | result.to_json()
    doc["summary"] = dict(doc["summary"], **_summary_metrics(metrics))
    doc["metrics"] = [rm.to_json() for rm in metrics]
    return doc


def _summary_metrics(metrics) -> dict:
    """The summary's TFLOP/s and MFU: one rank's, or over all ranks (TFLOP/s summed: the job's throughput; MFU
    the mean) - and which (`metrics_scope`); they used to be rank 0's without saying so."""
    if not metrics:
        return {"tflops": None, "mfu_pct": None}
    if len(metrics) == 1:
        return {"tflops": metrics[0].tflops, "mfu_pct": metrics[0].mfu_pct, "mfu_peak": metrics[0].mfu_peak,
                "metrics_scope": f"rank {metrics[0].rank}"}
    tf = [m.tflops for m in metrics if m.tflops is not None]
    mfu = [m.mfu_pct for m in metrics if m.mfu_pct is not None]
    return {"tflops": round(sum(tf), 4) if len(tf) == len(metrics) else None,
            "mfu_pct": round(sum(mfu) / len(mfu), 4) if len(mfu) == len(metrics) else None,
            "mfu_peak": metrics[0].mfu_peak,
            "metrics_scope": f"all {len(metrics)} traces: TFLOP/s summed, MFU their mean"}
