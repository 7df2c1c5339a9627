"""fp32_gemm: GEMM / convolution kernels running in plain FP32 (no tensor cores).

Recognised by cuBLAS / CUTLASS / cuDNN kernel names: `sgemm`, `simt`, `f32f32_f32f32`, `ffma` ... are
FP32 SIMT; names with `tf32`, `bf16`, `f16`, `tensorop`, `nvjet`, `hmma` ... use tensor cores and are
never flagged. Cost: the fp32 GEMM time times the savings fraction in rules.toml.
"""
from __future__ import annotations

import numpy as np

from core.analysis.critical_path import Edit
from core.rules import common, whatif
from core.rules.base import RuleContext, RuleOutput, WhatIf, rule
from core.trace.model import Kind, TraceModel


def tensor_core_factor(model: TraceModel, cfg: dict) -> tuple[float, str]:
    table = cfg["tensor_core_factor"]
    for p in model.meta.device_properties:
        cc = f"sm_{p.get('computeMajor', '')}{p.get('computeMinor', '')}"
        if cc in table:
            return float(table[cc]), cc
    return float(table["default"]), "default"


def _fp32(model, finding, rp, cfg) -> Edit:
    rows = whatif.of_kind(model, whatif.fix_rows(finding), Kind.KERNEL)
    factor, arch = tensor_core_factor(model, cfg)
    return Edit(label=f"GEMMs / {factor:g} (tensor cores, {arch})", scale_rows=rows,
                scale=np.full(len(rows), 1.0 / factor))


@rule("fp32_gemm", "FP32 GEMMs without tensor cores",
      what_if=WhatIf(_fp32, "the GEMM kernels divided by the tensor-core factor of the architecture "
                     "(resources/whatif.toml)"), doc="""
GEMM/conv kernels without tensor cores (`sgemm`, `simt`, `f32f32_f32f32`, `ffma`)""")
def fp32_gemm(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    cfg = ctx.cfg("fp32_gemm")
    fp32 = tuple(k.lower() for k in cfg["fp32_markers"])
    fine = tuple(k.lower() for k in cfg["fine_markers"])
    save = float(cfg["savings_fraction"])

    def is_fp32(name: str) -> bool:
        low = name.lower()
        return any(k in low for k in fp32) and not any(k in low for k in fine)

    for i, m in enumerate(ctx.models):
        rows = common.rows_with_names(m, "fp32-gemm", is_fp32, [Kind.KERNEL])
        rows = ctx.in_steps(i, rows)
        if not len(rows):
            continue
        s = m.slices
        gemm_ns = int(s.dur_ns[rows].sum())
        names, counts = np.unique(s.name[rows], return_counts=True)
        ev = [{"name": m.strings[int(n)], "calls": int(k), "dur_ns": int(s.dur_ns[rows[s.name[rows] == n]].sum()),
               "rank": m.rank} for n, k in zip(names, counts)]
        ev.sort(key=lambda e: -e["dur_ns"])
        out.findings.append(ctx.finding(
            "fp32_gemm", i,
            title=f"{len(rows)} GEMM/conv kernels run in FP32 without tensor cores ({gemm_ns / 1e6:.2f} ms)",
            count=len(rows), impact_ns=int(gemm_ns * save), time_ranges=common.ranges_of(m, rows),
            evidence=ev[:common.MAX_EVIDENCE], source=common.kernel_source(m, int(rows[np.argmax(s.dur_ns[rows])])),
            fix="Run the model under torch.autocast('cuda', dtype=torch.bfloat16) (bf16 tensor cores), or at least "
                "allow TF32: torch.backends.cuda.matmul.allow_tf32 = True / "
                "torch.set_float32_matmul_precision('high') (and torch.backends.cudnn.allow_tf32 = True).",
            evidence_rows=rows, fix_rows=rows))
    return out


RULES = (fp32_gemm,)
