"""The loop's wall-clock budget (train.max_seconds), the run summary (log.summary), phase lines
(log.phases) and the MoE dispatch policy under torch.compile (model.compile_moe_dispatch)."""
import json

import pytest
import torch

from trex.training.config import ConfigError
from trex.training.model import Transformer, get_config
from trex.training.model.moe import sparse_dispatch
from trex.training.train import prepare_moe_dispatch, train


def test_max_seconds_stops_before_the_next_step_and_is_summarised(make_config, tmp_path, capsys):
    summary_path = tmp_path / "summary.json"
    # the first step always runs (its time is mostly compilation); a tiny budget stops the loop after it
    result = train(make_config(**{"train.steps": 5, "train.max_seconds": 1e-3, "log.summary": str(summary_path),
                                  "log.phases": True}))
    assert [r["step"] for r in result.records] == [1]
    assert result.stop_reason == "max_seconds"
    summary = json.loads(summary_path.read_text())
    assert summary["steps_run"] == 1 and summary["stop_reason"] == "max_seconds"
    assert summary["first_step_s"] == result.records[0]["step_time_s"]
    assert summary["compile"] == {"mode": "eager", "dynamo": {"unique_graphs": 0, "graph_breaks": 0}}
    err = capsys.readouterr().err
    assert "stopping before step 2: train.max_seconds = 0.001" in err
    assert "[trex train rank 0 +" in err and "model built and moved" in err and "step 1 done" in err


def test_run_without_budget_reports_steps_and_compile_time(make_config):
    result = train(make_config(**{"train.steps": 4}))
    assert result.stop_reason == "steps" and result.summary["steps_run"] == 4
    times = [r["step_time_s"] for r in result.records]
    steady = result.summary["steady_step_s"]
    assert steady in times[2:]
    assert result.summary["compile_s"] == pytest.approx(sum(max(0.0, t - steady) for t in times))


def test_negative_budget_is_a_config_error(make_config):
    with pytest.raises(ConfigError, match="train.max_seconds"):
        make_config(**{"train.max_seconds": -1.0})


@pytest.mark.parametrize("policy", ["per_expert", "eager"])
def test_moe_dispatch_policy_keeps_the_function(policy):
    torch.manual_seed(0)
    model = Transformer(get_config("tiny", moe_dispatch="sparse"))
    tokens = torch.randint(0, 4096, (2, 16))
    reference = model(tokens)[0]
    assert prepare_moe_dispatch(model, policy, compiled=False) == 0      # eager runs are left alone
    assert prepare_moe_dispatch(model, "traced", compiled=True) == 0
    changed = prepare_moe_dispatch(model, policy, compiled=True)
    moes = [m for m in model.modules() if hasattr(m, "dispatcher") and hasattr(m, "experts")]
    assert changed == len(moes) > 0
    assert all(m.dispatcher is not sparse_dispatch for m in moes)
    torch.testing.assert_close(model(tokens)[0], reference, rtol=0, atol=0)
