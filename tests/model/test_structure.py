"""Fused-op sites of the model structure; (slow) trex on tiny: every site fused, results match eager."""
import re
from pathlib import Path

import pytest
import torch

from trex.training.model import Transformer, get_config, lm_loss
from trex.training.model.structure import expected_fused_ops


def test_expected_fused_ops_of_tiny():
    counts = expected_fused_ops(get_config("tiny"), 64)
    # 5 blocks (4 trunk + MTP), layer kinds SWA, CSA, HCA, CSA, SWA
    assert counts["mhc_pre"] == {"forward": 10, "backward": 10}
    assert counts["rms_norm"] == {"forward": 25 + 3 + 2 + 1 + 3, "backward": 25 + 3 + 1 + 3}
    assert counts["rope"] == {"forward": 15 + 3 + 4, "backward": 15 + 3}
    assert counts["swiglu_limited"] == {"forward": 45, "backward": 45}
    with pytest.raises(ValueError, match="dense"):
        expected_fused_ops(get_config("small"), 64)


def _count_ops(path: Path) -> dict[str, int]:
    text = path.read_text()
    counts: dict[str, int] = {}
    for op in re.findall(r"torch\.ops\.trex\.(\w+)\.default", text):
        counts[op] = counts.get(op, 0) + 1
    return counts


@pytest.mark.slow
def test_trex_fuses_every_site_of_tiny(tmp_path):
    pytest.importorskip("trex.compiler.backend")            # registers backend="trex"
    args = get_config("tiny")
    torch.manual_seed(0)
    model = Transformer(args)
    tokens = torch.randint(0, args.vocab_size, (2, 64))
    labels = torch.roll(tokens, -1, 1)
    eager_logits, eager_mtp = model(tokens)
    lm_loss(eager_logits, eager_mtp, labels)[0].backward()
    eager_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)

    compiled = torch.compile(model, backend="trex", options={"dump_dir": str(tmp_path)})
    logits, mtp = compiled(tokens)
    lm_loss(logits, mtp, labels)[0].backward()
    # fp32 end to end: the fused ops compute in fp32 too, so results agree to rounding
    torch.testing.assert_close(logits, eager_logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(mtp, eager_mtp, atol=1e-4, rtol=1e-4)
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert grads.keys() == eager_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, eager_grads[name], atol=1e-5, rtol=1e-3, msg=name)
    graphs = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(graphs) == 1, f"graph breaks: {[g.name for g in graphs]}"
    forward, backward = _count_ops(graphs[0] / "forward.py"), _count_ops(graphs[0] / "backward.py")
    for op, expected in expected_fused_ops(args, 64).items():
        assert forward.get(op, 0) == expected["forward"], (op, forward)
        assert backward.get(f"{op}_bwd", 0) + (backward.get(op, 0) if op == "rope" else 0) \
            == expected["backward"], (op, backward)
