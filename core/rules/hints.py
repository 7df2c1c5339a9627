"""zeros_then_overwrite (hint only): `torch.zeros(...)` immediately overwritten by a full `copy_`.

Found as an `aten::zeros` / `aten::zeros_like` op whose next sibling op on the same thread is `aten::copy_`
(the user filled the fresh zeros with other data). Hint only: the zero fill is wasted work, but small.
"""
from __future__ import annotations

import numpy as np

from core.analysis.stats import device_time_per_row
from core.rules import common
from core.rules.base import RuleContext, RuleOutput, rule
from core.trace.model import Kind


@rule("zeros_then_overwrite", "Zero-filled tensor overwritten right away", doc="""
hint: `torch.zeros` immediately overwritten by `copy_`""")
def zeros_then_overwrite(ctx: RuleContext) -> RuleOutput:
    out = RuleOutput()
    for i, m in enumerate(ctx.models):
        s = m.slices
        zeros_ids = common.name_ids(m, "zeros", common.exact("aten::zeros", "aten::zeros_like", "aten::new_zeros"))
        copy_id = m.strings.find("aten::copy_")
        if not len(zeros_ids) or copy_id < 0:
            continue
        ops = np.flatnonzero((s.kind == Kind.CPU_OP) & common.cpu_rows(m))
        allpar = common.parents(m)
        par = allpar[ops]
        order = np.lexsort((s.ts_ns[ops], par, s.track[ops]))
        o, p = ops[order], par[order]
        skip = common.name_ids(m, "alias-ops", common.exact("aten::detach", "detach", "aten::view", "aten::slice", "aten::select",
                                                  "aten::alias", "aten::as_strided", "aten::to", "aten::lift_fresh"))
        pos = np.flatnonzero(np.isin(s.name[o], zeros_ids))
        # inside autograd's own backward nodes (AsStridedBackward1's new_zeros + copy_ into a strided view):
        # not the user's code, nothing to change (a false positive on issue 28's public examples)
        autograd = common.name_ids(m, "autograd-nodes", lambda n: n.startswith("autograd::engine::")
                              or (n.endswith(tuple(f"Backward{d}" for d in "0123456789")) and "::" not in n))
        if len(pos) and len(autograd):
            pos = pos[~np.isin(s.name[np.maximum(p[pos], 0)], autograd) | (p[pos] < 0)]
        pos = pos[:MAX_ZEROS]
        z_rows, c_rows = [], []
        for k in pos.tolist():  # only the zeros ops: few rows
            for j in range(k + 1, min(k + 1 + LOOKAHEAD, len(o))):
                if p[j] != p[k] or s.track[o[j]] != s.track[o[k]]:
                    break
                if s.name[o[j]] == copy_id:
                    if _overwrites(m, int(o[k]), int(o[j]), allpar):
                        z_rows.append(int(o[k]))
                        c_rows.append(int(o[j]))
                    break
                if not np.isin(s.name[o[j]], skip):
                    break
        z, cp = np.asarray(z_rows, np.int64), np.asarray(c_rows, np.int64)
        steps = ctx.steps(i)
        if len(z) and not steps.synthetic:
            keep = steps.index_of(s.ts_ns[z]) >= 0
            z, cp = z[keep], cp[keep]
        if not len(z):
            continue
        _, dev = device_time_per_row(m)
        cost = int(s.dur_ns[z].sum() + dev[z].sum())
        out.findings.append(ctx.finding(
            "zeros_then_overwrite", i,
            title=f"torch.zeros(...) then copy_ into it ({len(z)}×): the zero fill is wasted",
            count=len(z), impact_ns=cost, time_ranges=common.ranges_of(m, z), evidence=common.evidence(m, z),
            source=common.source_of(m, int(z[0])),
            fix="Allocate with torch.empty(...) / torch.empty_like(...) when every element is overwritten, or "
                "create the tensor directly from the data (x.clone(), torch.as_tensor).",
            evidence_rows=np.concatenate([z, cp]), hint=True))
    return out


MAX_ZEROS = 10_000
LOOKAHEAD = 4


def _overwrites(m, zeros_row: int, copy_row: int, par: np.ndarray) -> bool:
    """copy_ writes the whole tensor: its destination and source have the zeros' shape (when recorded)."""
    dst, src = _dims(m, copy_row, 0), _dims(m, copy_row, 1)
    if dst is None:
        return True
    if src is not None and src != dst:
        return False
    r = m.track_rows(int(m.slices.track[zeros_row]))
    kids = np.flatnonzero(par[r] == zeros_row) + r.start
    shapes = [_dims(m, int(k), 0) for k in kids[:4]]
    shapes = [x for x in shapes if x]
    return not shapes or shapes[0] == dst


def _dims(m, row: int, k: int):
    import json
    text = m.strings[int(m.slices.at("input_dims", row))]
    if not text:
        return None
    try:
        return json.loads(text)[k]
    except (ValueError, IndexError, TypeError):
        return None


RULES = (zeros_then_overwrite,)
