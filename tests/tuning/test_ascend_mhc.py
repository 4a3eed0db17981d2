"""`trex tune` on mHC's Ascend layout (the Cube split): every AIV program of both directions is tuned, each
candidate verified in the emulator against the fp64 reference before anything is stored, and the emulate
target launches the store's choice. Tiny shapes; a search of the root alone (the search itself: test_search.py)."""
import pytest
import torch

from trex.codegen_ascendc.emulator import compiler_available
from trex.tuning import harness
from trex.tuning.ascend import AscendBackend
from trex.tuning.search import Planted, Search, tune_all
from trex.tuning.store import Store

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler for the AscendC emulator")

TARGET = "ascend910c"
SHAPE = {"ROWS": 5, "N": 4, "HD": 40, "ITERS": 2}
PROGRAMS = {"mhc_pre": ["mhc_pre_fwd_cube_bf16"],
            "mhc_pre_bwd": ["mhc_pre_bwd_coeff_cube_bf16", "mhc_pre_bwd_apply_cube_bf16"]}
ROW_LOOP = "row0 < rowEnd_; row0 += tl_.rowsPerTile"
CHUNK_LOOP = "c0 < tl_.HD; c0 += tl_.colChunk"


def skip_tail_rows(source: str) -> str:
    assert ROW_LOOP in source, "the printer's row-tile loop changed; update the planted bug"
    return source.replace(ROW_LOOP, "row0 + tl_.rowsPerTile <= rowEnd_; row0 += tl_.rowsPerTile")


def skip_tail_chunk(source: str) -> str:
    assert CHUNK_LOOP in source, "the printer's column-chunk loop changed; update the planted bug"
    return source.replace(CHUNK_LOOP, "c0 + tl_.colChunk <= tl_.HD; c0 += tl_.colChunk")


def test_the_layouts_programs_are_every_aiv_launch_of_the_runner():
    for pattern, names in PROGRAMS.items():
        assert [p.name for p in harness.layout_programs(pattern, "bf16")] == names
    apply = harness.build_program("mhc_pre_bwd", "bf16", index=1)
    # the apply program takes no Sinkhorn iterations: its store entry is keyed by the sizes it binds
    assert harness.program_sizes(apply, SHAPE) == {"ROWS": 5, "N": 4, "HD": 40}
    with pytest.raises(Exception, match="program index 2 does not exist"):
        harness.build_program("mhc_pre_bwd", "bf16", index=2)


def _op_args(g: torch.Generator):
    rows, n, d, iters = SHAPE["ROWS"], SHAPE["N"], SHAPE["HD"], SHAPE["ITERS"]
    x = torch.randn(rows, n, d, generator=g).bfloat16()
    fn = torch.randn((2 + n) * n, n * d, generator=g) * (n * d) ** -0.5
    scale, base = torch.rand(3, generator=g) + 0.5, torch.randn((2 + n) * n, generator=g) * 0.1
    grads = (torch.randn(rows, d, generator=g).bfloat16(), torch.randn(rows, n, generator=g),
             torch.randn(rows, n, n, generator=g))
    return (x, fn, scale, base, iters, 1e-6, 1e-6), grads


def test_every_program_gets_a_verified_entry_and_the_emulate_target_launches_it(store_path, verifier):
    from trex.codegen_ascendc.target import EmulatorExecutor, run_op
    from trex.cost_models.hardware import ascend_target
    from trex.passes.mhc_pre.op import mhc_pre_bwd_reference, mhc_pre_reference

    stored = {}
    for pattern, names in PROGRAMS.items():
        results = tune_all(TARGET, pattern, "bf16", SHAPE, store=Store(store_path), max_candidates=1, patience=1,
                           checks=1, verifier=verifier)
        assert len(results) == len(names)
        for name, res in zip(names, results):
            assert not res.from_store and res.time_s <= res.baseline_time_s
            chosen = next(n for n in res.nodes if n.status in ("root", "committed") and n.config == res.config)
            # verified in the emulator before it could be stored: the judge's record rides on the profile
            assert chosen.profile["verified"]["checks"] == 1 and chosen.profile["verified"]["rows_checked"]
            stored[name] = res
    configs = Store(store_path).data["configs"]
    assert sorted(e["program"] for e in configs.values()) == sorted(n for ns in PROGRAMS.values() for n in ns)
    for e in configs.values():
        res = stored[e["program"]]
        assert e["config"] == res.config and e["kernel_sha256"] == res.kernel_sha256 and e["made_with"]["checks"] == 1
    apply = configs["mhc_pre_bwd[mhc_pre_bwd_apply_cube_bf16]|HD=40,N=4,ROWS<=8|bf16|ascend910c"]
    assert apply["sizes"] == {"ROWS": 5, "N": 4, "HD": 40} and apply["unit"] == "mhc_pre_bwd_apply_cube_bf16"

    # the emulate target on the tuned hardware launches each program at its stored tiling (the store
    # file is the one TREX_TUNING_STORE names, as the `trex.tuned_configs` entry point reads it)
    ex = EmulatorExecutor(hw=ascend_target(TARGET), opt="-O0")
    fwd, grads = _op_args(torch.Generator().manual_seed(4))
    record: list = []
    got_fwd = run_op("mhc_pre", fwd, executor=ex, record=record)
    got_bwd = run_op("mhc_pre_bwd", (*grads, *fwd), executor=ex, record=record)
    assert [r["program"].name for r in record] == [n for ns in PROGRAMS.values() for n in ns]
    differs = 0
    for r in record:
        cfg = stored[r["program"].name].config
        til = r["tiling"]
        assert (til.rows_per_tile, til.col_chunk, til.buffer_depth, til.cores) == (
            cfg["rows_per_tile"], cfg.get("col_chunk"), cfg["buffer_depth"], cfg["cores"]), r["program"].name
        differs += til != ex.solved_tiling(r["program"], r["sizes"])
    assert differs, "the stored tilings equal the executor's own choice: the test would not see a lookup"
    # and what it launched is right (fp64 reference, bf16-level tolerance)
    d64 = [a.double() if torch.is_tensor(a) else a for a in fwd]
    for a, r in zip(got_fwd, mhc_pre_reference(*d64)):
        torch.testing.assert_close(a.double(), r, atol=2e-2, rtol=2e-2)
    for a, r in zip(got_bwd, mhc_pre_bwd_reference(*(g.double() for g in grads), *d64)):
        torch.testing.assert_close(a.double(), r.double(), atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("pattern,index,bug,knobs", [
    ("mhc_pre", 0, skip_tail_rows, {"rows_per_tile": 2, "cores": 5}),
    ("mhc_pre_bwd", 1, skip_tail_chunk, {"col_chunk": 16}),
], ids=["forward-skips-tail-rows", "backward-apply-skips-tail-chunk"])
def test_a_candidate_that_skips_a_tail_tile_is_rejected(store_path, verifier, pattern, index, bug, knobs):
    """A planted kernel that skips the last row tile (every row a tail: one row per core, two-row tiles)
    or the last column chunk (HD = 40 in chunks of 16) is rejected by the judge and never stored."""
    b = AscendBackend(TARGET, pattern, "bf16", SHAPE, program_index=index)
    root_cfg, _ = b.initial()
    planted_cfg = dict(root_cfg, **knobs)
    assert not b.infeasible(planted_cfg)
    s = Search(b, Store(store_path), max_candidates=2, checks=1, verifier=verifier,
               planted=[Planted(bug.__name__, planted_cfg, bug)])
    res = s.run(use_store=False)
    node = next(n for n in res.nodes if n.move == f"planted:{bug.__name__}")
    assert node.status == "rejected" and "non-finite" in node.reason and node.time_s is None, node.reason
    assert res.time_s <= res.baseline_time_s
