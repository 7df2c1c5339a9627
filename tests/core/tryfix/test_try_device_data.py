"""`ptprof try` on bundles recorded on the H100 (tests/data/device/try, bench/device_try.sh, torch 2.11+cu130):
which findings get a Try, what they predict, the switches' records, the measurement's basis."""
from __future__ import annotations

import json

from helpers import REPO

from core.tryfix import plan
from core.tryfix.measure import RECORDED, measure, unprofiled_steps
from core.tryfix.store import read_switches, read_tried

DATA = REPO / "tests" / "data" / "device" / "try"


def test_device_mlp_gets_a_try_for_each_switchable_finding():
    b = plan.load_before(DATA / "mlp")
    assert b.cuda and b.run["step_source"] == "optimizer"
    # Adam(foreach=False), zero_grad(set_to_none=False), fp32 GEMMs, a launch-bound loop: one switch each
    assert set(plan.candidates(b)) == {"foreach", "set_to_none", "tf32", "compile=reduce-overhead"}
    ns, pct, rules = plan.predicted(b, "foreach")
    assert rules == ["single_tensor_optimizer"] and ns > 1e6 and 5 < pct < 60  # the what-if (h28trust) moves; by hand: 40 %
    assert plan.precheck(b, "pin_memory").startswith("pin_memory: the recorded run shows no torch.utils.data.DataLoader")
    assert plan.timing_schedule(b).wait == 200 - 7 - 2  # the window of 2 + 5 steps moved to the end


def test_device_switch_records():
    (foreach,) = read_switches(DATA / "mlp.tries" / "foreach")
    assert foreach["status"] == "applied" and foreach["message"] == "foreach=True on Adam"
    (cl,) = read_switches(DATA / "amp_conv.tries" / "channels_last")
    assert cl["status"] == "applied" and "in channels_last (3 weights)" in cl["message"]
    # torch 2.11 counted the compiled frames only in counters['frames']: refused then (fixed since, see
    # test_switches.test_compiled_frames_are_counted_whichever_counter_torch_keeps)
    (comp,) = read_switches(DATA / "mlp.tries" / "compile-reduce-overhead")
    assert comp["status"] == "refused"


def test_device_measurement_basis():
    # the before run's clean steps: the 4 wait steps before its window (the first one pays the start)
    assert len(unprofiled_steps(DATA / "mlp")) == 4
    m = measure([DATA / "mlp"], [DATA / "mlp.tries" / "foreach"], use_cache=False)
    assert m.basis == RECORDED and m.saving_ns > 0  # too few clean steps: the traces' steps, and it says so
    tried = read_tried(DATA / "mlp")  # what the device run stored (its basis then: post-window steps)
    assert tried["foreach"]["measured_saving_ns"] > 0 and tried["foreach"]["predicted_saving_ns"] > 0
    byhand = {json.loads(line)["loop"]: json.loads(line) for line in (DATA / "byhand.jsonl").read_text().splitlines()}
    assert byhand["mlp"]["step_ms"]["foreach"] < byhand["mlp"]["step_ms"]["base"]
