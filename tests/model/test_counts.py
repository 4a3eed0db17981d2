"""Parameter counts (spec §7), FLOPs per token (spec §9) and the MFU helpers."""
import math

import pytest

from trex.training import mfu
from trex.training.model import count_parameters, flops_breakdown, flops_per_token, get_config


def _round_to_significant(value: float, digits: int) -> float:
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


# official release figures (spec §0 [P4]) with the significant digits they are quoted with, and
# the spec's own shape-based counts (spec §7 "my count from shapes")
RELEASE = {"flash": {"total": (284e9, 3), "activated": (13e9, 2)},
           "pro": {"total": (1.6e12, 2), "activated": (49e9, 2)}}
SPEC_COUNTS = {"flash": {"total": 284.3e9, "activated": 13.27e9, "total_with_mtp": None},
               "pro": {"total": 1573.0e9, "activated": 48.85e9, "total_with_mtp": 1598.8e9}}


@pytest.mark.parametrize("name", ["flash", "pro"])
def test_parameter_counts_reproduce_the_release(name):
    counts = count_parameters(get_config(name))
    # the spec's counting convention (activated: no input embedding, with head, k experts; no MTP)
    for field, spec_value in SPEC_COUNTS[name].items():
        if spec_value is not None:
            assert abs(getattr(counts, field) - spec_value) <= 0.01 * spec_value, field
    # the released figures are rounded; our counts round to exactly them
    for field, (value, digits) in RELEASE[name].items():
        assert _round_to_significant(getattr(counts, field), digits) == value, field
    # within 1 % of the release where its rounding allows (Flash total, Pro activated; Pro total with MTP)
    if name == "flash":
        assert abs(counts.total - 284e9) <= 0.01 * 284e9
    else:
        assert abs(counts.activated - 49e9) <= 0.01 * 49e9
        assert abs(counts.total_with_mtp - 1.6e12) <= 0.01 * 1.6e12


def test_small_config_size():
    counts = count_parameters(get_config("small"))
    assert 0.5e9 <= counts.total_with_mtp <= 1.0e9


# spec §9 worked numbers, GFLOP per token: (T, 6 N_act, core attention, indexer x2, MTP)
SPEC_FLOPS = {"flash": [(4096, 79.6, 5.4, 0.18, 5.1), (16384, 79.6, 6.6, 0.70, 5.1), (65536, 79.6, 8.3, 2.8, 5.1)],
              "pro": [(4096, 293.1, 18.5, 0.25, 10.8), (16384, 293.1, 28.8, 1.0, 10.8),
                      (65536, 293.1, 35.8, 4.0, 10.8)]}


@pytest.mark.parametrize("name", ["flash", "pro"])
def test_flops_per_token_matches_the_spec_table(name):
    args = get_config(name)
    for seq_len, dense, attention, indexer, mtp in SPEC_FLOPS[name]:
        parts = {k: v / 1e9 for k, v in flops_breakdown(args, seq_len).items()}
        assert parts["dense"] == pytest.approx(dense, rel=0.005)
        assert parts["attention"] == pytest.approx(attention, rel=0.02)
        assert parts["indexer"] == pytest.approx(indexer, rel=0.03)
        assert parts["mtp"] == pytest.approx(mtp, rel=0.02)     # ours adds the MTP block's SWA (~0.05 GF)
        total = flops_per_token(args, seq_len) / 1e9
        assert total == pytest.approx(dense + attention + indexer + mtp, rel=0.01)
    trained = flops_breakdown(args, 4096, indexer_trained=True)["indexer"]
    assert trained == pytest.approx(3 * flops_breakdown(args, 4096)["indexer"])
    assert flops_per_token(args, 4096, include_mtp=False) < flops_per_token(args, 4096)


def test_mfu_table_and_helper():
    for key, entry in mfu.PEAK_BF16_DENSE.items():
        assert entry.flops > 1e14 and entry.source
    assert mfu.peak_flops("h200") == pytest.approx(989.5e12)
    assert mfu.peak_flops("ascend910b") == pytest.approx(353.9e12, rel=1e-3)
    assert mfu.peak_flops("ascend910c_die") == pytest.approx(363.8e12, rel=1e-3)
    assert mfu.device_key_from_name("NVIDIA H200") == "h200"
    assert mfu.device_key_from_name("Ascend910B2") == "ascend910b"
    assert mfu.device_key_from_name("Ascend910_9392") == "ascend910c_die"
    assert mfu.device_key_from_name("NVIDIA H100 80GB HBM3") == "h100_sxm"
    assert mfu.device_key_from_name("NVIDIA H100 PCIe") is None     # another peak, not in the table
    assert mfu.device_key_from_name("Tesla T4") is None
    # 1e9 FLOP/token at 1e5 tokens/s on 2 devices of 1e15 FLOP/s = 5 %
    assert mfu.mfu(1e9, 1e5, n_devices=2, peak_flops_per_device=1e15) == pytest.approx(0.05)
    assert mfu.mfu(1e9, 1e5, device="h200") == pytest.approx(1e14 / 989.5e12)
    with pytest.raises(ValueError, match="no peak FLOP/s known"):
        mfu.peak_flops("tpu")
