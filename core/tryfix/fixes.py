"""Which findings get a "Try it": rule id -> the runtime switch that applies its fix (core/runner/switches.py).

Every other rule's fix needs a code change (no button; the fix text stays). A fix ID given to
`ptprof try --fix` / `record --apply` is a switch (`pin_memory`, `num_workers=4`, `compile=reduce-overhead`)
or a rule id with a switch (`pageable_memcpy` -> pin_memory).
"""
from __future__ import annotations

from core.runner.switches import NAMES, SwitchError, parse, spec_text

# rule id -> switch spec. The switch is the fix the rule's text names first and the one its what-if models:
RULE_SWITCH = {
    "pageable_memcpy": "pin_memory",  # pinned + non_blocking copies (what-if: pinned bandwidth, async)
    "dataloader_bound": "num_workers",  # loading overlapped with the step (what-if: overlapped)
    "fp32_gemm": "tf32",  # tensor-core GEMMs (what-if: the architecture's tensor-core factor)
    "channels_last": "channels_last",  # no NCHW<->NHWC conversions (what-if: conversions removed)
    "zero_grad_not_none": "set_to_none",  # no zero-fill per parameter (what-if: zero-fills removed)
    "single_tensor_optimizer": "foreach",  # multi-tensor kernels (what-if: launches fused)
    "launch_bound": "compile=reduce-overhead",  # CUDA graphs (what-if: one launch per run of kernels)
    "cudnn_benchmark_off": "cudnn_benchmark",  # the cuDNN autotuner on (no what-if: a hint, measured by try)
}
# switches a rule's finding can also be tried with (second choice)
ALTERNATIVES = {"fp32_gemm": ("bf16_autocast",), "single_tensor_optimizer": ("fused",)}


def switch_for_rule(rule: str) -> str | None:
    """The switch spec that tries this rule's fix, or None: the fix needs a code change."""
    return RULE_SWITCH.get(rule)


def rules_for_switch(name: str) -> list[str]:
    """Rule ids whose findings a switch (name without value) fixes."""
    out = [r for r, spec in RULE_SWITCH.items() if spec.partition("=")[0] == name]
    out += [r for r, alts in ALTERNATIVES.items() if name in alts and r not in out]
    return out


def resolve(ids: str) -> list[tuple[str, str | None]]:
    """'pageable_memcpy,tf32,num_workers=4' -> [(switch, value), ...] (rule ids mapped to their switch);
    SwitchError (one line) for an unknown id or a rule whose fix needs a code change."""
    specs = []
    for item in (ids or "").split(","):
        item = item.strip()
        if not item:
            continue
        name = item.partition("=")[0].strip()
        if name in NAMES:
            specs.append(item)
            continue
        from core.rules import RULE_IDS
        if name in RULE_IDS:
            spec = switch_for_rule(name)
            if spec is None:
                raise SwitchError(f"{name}: its fix needs a code change (no runtime switch applies it)")
            specs.append(spec)
            continue
        raise SwitchError(f"unknown fix {name!r}: give a switch ({', '.join(NAMES)}) or a rule id that has one "
                          f"({', '.join(sorted(RULE_SWITCH))})")
    if not specs:
        raise SwitchError("no fix given")
    seen, unique = set(), []
    for spec in specs:  # a rule and its own switch named together: once
        if spec.partition("=")[0] not in seen:
            seen.add(spec.partition("=")[0])
            unique.append(spec)
    return parse(",".join(unique))


def resolve_spec(ids: str) -> str:
    return spec_text(resolve(ids))
