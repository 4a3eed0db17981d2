"""`trex demo`: bad sizes exit 2 naming the option; every FAILED line in the summary says why."""
import pytest

from trex.training import demo


@pytest.mark.parametrize("argv, named", [
    (["--steps", "0"], "--steps"), (["--steps", "1"], "--steps"), (["--steps", "x"], "--steps"),
    (["--seq-len", "0"], "--seq-len"), (["--seq-len", "-4"], "--seq-len"),
])
def test_bad_sizes_exit_2_naming_the_option(argv, named, capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {named}:" in err and "pass a whole number >=" in err and "Traceback" not in err


def test_every_failed_part_states_its_reason(monkeypatch, capsys):
    monkeypatch.setattr(demo, "verify_generated_ascendc", lambda: "rope (bfloat16): AssertionError: off by [2] ulps")
    monkeypatch.setattr(demo, "train_a_few_steps", lambda steps: (_ for _ in ()).throw(RuntimeError("disk full")))
    assert demo.main(["--skip", "compile", "--steps", "2"]) == 1
    out = capsys.readouterr().out
    summary = out[out.rindex("summary"):]
    failed = [line for line in summary.splitlines() if "FAILED" in line]
    assert len(failed) == 2, out
    assert "emulate  FAILED: rope (bfloat16): AssertionError: off by [2] ulps" in failed[0]
    assert "train    FAILED: RuntimeError: disk full" in failed[1]


def test_train_part_says_why_the_loss_check_failed(monkeypatch):
    import trex.training.train as train_module
    result = train_module.TrainResult(records=[{"step": 1, "loss": 5.0, "tokens_per_s": 1.0},
                                               {"step": 2, "loss": 5.5, "tokens_per_s": 1.0}],
                                      final_step=2, stop_reason="steps")
    monkeypatch.setattr(train_module, "train", lambda cfg: result)
    assert demo.train_a_few_steps(2) == "the loss did not fall: step 1 5.0000, mean of the last 1 steps 5.5000"
