"""Moves, their normalisation to each target's rules, and regimes."""
import pytest

from trex.tuning import space


def test_ascend_col_chunk_moves_stay_multiples_of_16():
    cfg = {"rows_per_tile": 1, "col_chunk": 48, "buffer_depth": 2, "cores": 4}
    assert space.apply_move("ascend910b", cfg, space.Move("col_chunk", "div", 2))["col_chunk"] == 16
    assert space.apply_move("ascend910b", cfg, space.Move("col_chunk", "mul", 2))["col_chunk"] == 96


def test_cuda_knobs_stay_powers_of_two_and_noops_are_dropped():
    cfg = {"rows_per_tile": 1, "col_chunk": None, "num_warps": 4, "num_stages": 1, "programs": None,
           "reverse_second_pass": True, "second_chunk": None, "hist_scratch": True}
    assert space.apply_move("cuda", cfg, space.Move("rows_per_tile", "div", 2)) is None   # 1 // 2 = 0: no candidate
    assert space.apply_move("cuda", cfg, space.Move("num_warps", "mul", 2))["num_warps"] == 8
    assert space.apply_move("cuda", cfg, space.Move("num_stages", "set", 1)) is None      # already 1
    assert space.apply_move("cuda", cfg, space.Move("hist_scratch", "flip", None))["hist_scratch"] is False
    names = {m.name for m in space.moves_for("cuda", cfg)}
    # None knobs can be set, not scaled
    assert "col_chunk*2" not in names and "programs/2" not in names and "num_warps*2" in names


def test_moves_skip_knobs_the_program_does_not_have():
    cfg = {"rows_per_tile": 2, "buffer_depth": 2, "cores": 8}          # no ChunkLoop: no col_chunk
    names = [m.name for m in space.moves_for("ascend910c", cfg)]
    assert not any(n.startswith("col_chunk") for n in names)
    assert "rows_per_tile-1" in names and "buffer_depth=1" in names


def test_regime_is_the_largest_pipe():
    assert space.regime({"mte2": 3.0, "vec": 1.0, "scalar": 0.5}) == ("memory-bound", "mte2")
    assert space.regime({"mte2": 1.0, "vec": 2.0}) == ("vector-bound", "vec")
    assert space.regime({"scalar": 2.0, "gm": 1.0}) == ("scalar-bound", "scalar")
    assert space.regime({"mystery": 1.0}) == ("unknown", "")


def test_unknown_target_names_the_choices():
    with pytest.raises(ValueError, match="cuda, ascend910b or ascend910c"):
        space.family("tpu")
