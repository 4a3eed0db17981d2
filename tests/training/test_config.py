"""Config as data: TOML file, command-line overrides, and errors that name the bad key."""
import pytest

from training.config import ConfigError, load_config, parse_overrides


def test_toml_then_overrides(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[optim]\nlr = 1e-3\nbetas = [0.8, 0.9]\n[data]\npaths = ["corpus/*.jsonl"]\n'
                    '[model.overrides]\nn_layers = 2\n')
    cfg = load_config(path, parse_overrides(["--optim.lr", "3e-4", "--train.steps=7",
                                             "--model.overrides.dim", "64", "--model.compile", "eager"]))
    assert cfg.optim.lr == 3e-4 and cfg.optim.betas == [0.8, 0.9]
    assert cfg.train.steps == 7 and cfg.model.compile == "eager"
    assert cfg.model.overrides == {"n_layers": 2, "dim": 64}
    assert cfg.data.paths == [str(tmp_path / "corpus/*.jsonl")]   # relative to the TOML file


def test_int_widens_to_float_and_bool_parses():
    cfg = load_config(None, parse_overrides(["--optim.lr", "1", "--log.progress", "false"]))
    assert cfg.optim.lr == 1.0 and isinstance(cfg.optim.lr, float) and cfg.log.progress is False


@pytest.mark.parametrize("argv, message", [
    (["--optim.lrr", "1"], "optim.lrr"),
    (["--optimizer.lr", "1"], "optimizer.lr"),
    (["--train.steps", "ten"], "train.steps: expected int"),
    (["--model.compile", "jit"], "model.compile"),
    (["--train.steps", "0"], "train.steps = 0"),
    (["--optim.betas", "[0.9]"], "optim.betas"),
])
def test_errors_name_the_key(argv, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_config(None, parse_overrides(argv))


def test_shipped_configs_load():
    from pathlib import Path
    for path in sorted(Path(__file__).parents[2].glob("configs/*.toml")):
        cfg = load_config(path)
        assert cfg.data.paths, path
