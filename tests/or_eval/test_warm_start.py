"""SFT after CPT: the training loop's model builder gets the checkpoint's weights inside init_from."""
import pytest
import torch

pytest.importorskip("trex.training.train")


def test_init_from_loads_checkpoint_weights_and_restores_the_builder(tmp_path):
    import trex.training.train as loop
    from trex.training.checkpoint import Checkpointer, model_state
    from trex.training.config import load_config
    from trex.training.or_eval.model_io import load_for_eval
    from trex.training.or_eval.warm_start import init_from

    cfg = load_config(None, [("model.overrides", {"vocab_size": 300}), ("data.seq_len", 32),
                             ("checkpoint.dir", str(tmp_path))])
    torch.manual_seed(0)
    _, _, trained = loop.build_model(cfg, 300)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(0.5)   # "trained" weights, far from any fresh initialisation
    Checkpointer(tmp_path).save(7, {"step": 7, "model": model_state(trained), "config": cfg.to_dict()})

    original = loop.build_model
    with init_from(tmp_path):
        torch.manual_seed(1)
        _, _, warm = loop.build_model(cfg, 300)
    assert loop.build_model is original
    for (name, a), b in zip(trained.state_dict().items(), warm.state_dict().values()):
        assert torch.equal(a, b), name
    torch.manual_seed(1)
    _, _, fresh = loop.build_model(cfg, 300)
    assert not torch.equal(next(iter(fresh.state_dict().values())), next(iter(trained.state_dict().values())))
    # the evaluation loader reads the same checkpoint (no tokenizer.json here: the config's "byte" one)
    model, tok, info = load_for_eval(tmp_path, device="cpu")
    assert info["step"] == 7 and tok.vocab_size <= 300
    assert torch.equal(next(iter(model.state_dict().values())), next(iter(trained.state_dict().values())))
