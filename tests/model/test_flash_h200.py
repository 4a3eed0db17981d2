"""The flash_h200 config: V4-Flash's widths, the documented counts, FLOPs and memory (docs/model.md)."""
import pytest

from trex.training import mfu
from trex.training.model import count_parameters, flops_breakdown, flops_per_token, get_config


def test_keeps_flash_widths():
    flash, small = get_config("flash"), get_config("flash_h200")
    for field in ("dim", "vocab_size", "n_heads", "head_dim", "rope_head_dim", "q_lora_rank", "o_groups",
                  "o_lora_rank", "window_size", "index_n_heads", "index_head_dim", "moe_inter_dim",
                  "n_activated_experts", "n_shared_experts", "hc_mult", "swiglu_limit", "route_scale"):
        assert getattr(small, field) == getattr(flash, field), field
    assert small.compress_ratios == (0, 0, 4, 128, 0) == flash.compress_ratios[:4] + flash.compress_ratios[-1:]
    assert small.index_topk < small.max_seq_len // 4          # the indexer really selects at T = max_seq_len
    assert small.moe_dispatch == "grouped"


def test_documented_counts_flops_and_memory():
    args = get_config("flash_h200")
    c = count_parameters(args)
    assert (round(c.total / 1e9, 3), round(c.mtp_total / 1e9, 3), round(c.total_with_mtp / 1e9, 3)) == (3.225, 0.569, 3.794)
    assert round(c.activated_with_mtp / 1e9, 3) == 2.007
    parts = flops_breakdown(args, 1024)
    assert parts["dense"] == pytest.approx(6 * c.activated)
    assert flops_per_token(args, 1024) / 1e9 == pytest.approx(15.49, abs=0.01)
    # 25% MFU at 4 x 1024 tokens a step is a 0.257 s step
    step_s = 4 * 1024 * flops_per_token(args, 1024) / (0.25 * mfu.peak_flops("h200"))
    assert step_s == pytest.approx(0.257, abs=0.001)
    # fp32 weights + grads + AdamW m, v leave > 75 GB of the H200 for activations
    assert c.total_with_mtp * 16 / 1e9 < 61
