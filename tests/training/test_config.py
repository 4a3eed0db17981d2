"""Config as data: TOML file, command-line overrides, and errors that name the bad key."""
import re

import pytest

from trex.training.config import ConfigError, load_config, parse_overrides, validate_launch


def test_toml_then_overrides(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[optim]\nlr = 1e-3\nbetas = [0.8, 0.9]\n[data]\npaths = ["corpus/*.jsonl"]\n'
                    '[model.overrides]\nn_layers = 2\ncompress_ratios = [0, 4, 0]\nn_hash_layers = 1\n')
    cfg = load_config(path, parse_overrides(["--optim.lr", "3e-4", "--train.steps=7",
                                             "--model.overrides.dim", "64", "--model.compile", "eager"]))
    assert cfg.optim.lr == 3e-4 and cfg.optim.betas == [0.8, 0.9]
    assert cfg.train.steps == 7 and cfg.model.compile == "eager"
    assert cfg.model.overrides == {"n_layers": 2, "compress_ratios": [0, 4, 0], "n_hash_layers": 1, "dim": 64}
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
    (["--model.name", "nano"], "model.name = 'nano'; choose one of ['flash', 'flash_h200', 'pro', 'small', 'tiny']"),
    (["--model.overrides.layers", "2"], "model.overrides.layers: ModelArgs has no field 'layers'"),
    (["--model.overrides.n_layers", "2"], "compress_ratios has 5 entries"),   # tiny has 4 + 1 MTP layers
    (["--distributed.ep", "3"], "distributed.ep = 3 does not divide the model's 8 routed experts"),
    (["--data.tokenizer", "bpe"], "data.tokenizer = 'bpe': unknown"),
])
def test_errors_name_the_key(argv, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(None, parse_overrides(argv))


def test_shipped_configs_load():
    from pathlib import Path
    for path in sorted(Path(__file__).parents[2].glob("trex/configs/*.toml")):
        cfg = load_config(path)
        assert cfg.data.paths, path


@pytest.mark.parametrize("ep, world, message", [
    (2, 1, "distributed.ep = 2 needs 2 processes (one per expert-parallel rank), but this is a single process; "
           "launch with torchrun --nproc_per_node 2"),
    (2, 3, "distributed.ep = 2 does not divide the 3 processes"),
])
def test_launch_must_fit_expert_parallelism(ep, world, message):
    cfg = load_config(None, [("distributed.ep", ep)])      # loads alone: --print-config works without torchrun
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_launch(cfg, world)
    validate_launch(cfg, 2 * ep)                           # a multiple of ep processes is fine
