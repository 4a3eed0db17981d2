"""The search tree on the modeled Ascend profile: store answers, planted wrong candidates, commits,
rollbacks, skills, branching, and never-worse-than-the-cost-model."""
import pytest

from trex.codegen_ascendc.emulator import compiler_available
from trex.tuning import harness, space
from trex.tuning.ascend import AscendBackend
from trex.tuning.search import Planted, Search, tune
from trex.tuning.store import Store

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler for the AscendC emulator")

LOOP = "row0 < rowEnd_; row0 += tl_.rowsPerTile"


def skip_tail_rows(source: str) -> str:
    assert LOOP in source, "the printer's row-tile loop changed; update the planted bug"
    return source.replace(LOOP, "row0 + tl_.rowsPerTile <= rowEnd_; row0 += tl_.rowsPerTile")


STATUSES = {"root", "committed", "rolled_back", "rejected", "infeasible", "failed"}


def test_second_search_is_answered_from_the_store_without_compiling(store_path, verifier, monkeypatch):
    first = tune("ascend910b", "rms_norm", "bf16", {"ROWS": 13, "D": 64}, max_candidates=3, verifier=verifier)
    assert not first.from_store and first.compiled >= 1
    assert first.time_s <= first.baseline_time_s
    assert first.profile_label.startswith("modeled")

    from trex.codegen_ascendc.emulator import runner

    def no_compile(*a, **k):
        raise AssertionError("a store answer must not compile anything")
    monkeypatch.setattr(runner, "compile_kernel", no_compile)
    compiles = harness.COMPILE_COUNT["n"]
    requests = verifier.requests
    # same bucket (ROWS 13 and 16 both <= 16), fresh Store object read from the file
    second = tune("ascend910b", "rms_norm", "bf16", {"ROWS": 16, "D": 64}, store=Store(store_path),
                  max_candidates=3, verifier=verifier)
    assert second.from_store and second.compiled == 0 and second.nodes == []
    assert harness.COMPILE_COUNT["n"] == compiles and verifier.requests == requests
    assert (second.config, second.time_s) == (first.config, first.time_s)


def test_planted_fast_but_wrong_candidate_is_rejected(store_path, verifier):
    b = AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 13, "D": 64})
    root_cfg, _ = b.initial()
    # the solver gives every core one row; with two-row tiles every row is a "tail" the bug skips
    planted_cfg = dict(root_cfg, rows_per_tile=2)
    # it really is faster than the cost model's choice on the modeled profile: it does less work
    fast = b.profile(b.compile(planted_cfg, skip_tail_rows))["time_s"]
    honest = b.profile(b.compile(root_cfg))["time_s"]
    assert fast < honest
    s = Search(b, Store(store_path), max_candidates=2, verifier=verifier,
               planted=[Planted("skip_tail_rows", planted_cfg, skip_tail_rows)])
    res = s.run(use_store=False)
    node = next(n for n in res.nodes if n.move == "planted:skip_tail_rows")
    assert node.status == "rejected" and "non-finite" in node.reason and node.time_s is None
    assert res.config != planted_cfg or res.time_s >= honest * (1 - 1e-9)
    assert res.time_s <= res.baseline_time_s


class _PoorStart(AscendBackend):
    """A backend whose 'cost model choice' is one core: leaves room for the search to commit."""

    def initial(self):
        cfg, _ = super().initial()
        cfg = dict(cfg, cores=1, rows_per_tile=1)
        return cfg, self.predict(cfg)


def test_commits_checkpoints_rolls_back_and_distills_skills(store_path, verifier):
    store = Store(store_path)
    b = _PoorStart("ascend910b", "rms_norm", "bf16", {"ROWS": 24, "D": 64})
    res = Search(b, store, max_candidates=6, patience=6, verifier=verifier).run(use_store=False)
    by_id = {n.id: n for n in res.nodes}
    assert {n.status for n in res.nodes} <= STATUSES
    committed = [n for n in res.nodes if n.status == "committed"]
    assert committed, [(n.move, n.status, n.time_s) for n in res.nodes]
    for n in committed:       # each checkpoint strictly beats the checkpoint it came from
        assert n.time_s < by_id[n.parent].time_s
    for n in res.nodes:
        if n.status == "rolled_back":
            assert n.time_s >= by_id[n.parent].time_s * (1 - s_min_gain())
    assert res.time_s < res.baseline_time_s and res.config == min(committed, key=lambda n: n.time_s).config
    wins = {k: v for k, v in store.data["skills"].items() if v["wins"]}
    assert wins and all(k.startswith("ascend|") for k in wins)
    # the skills now order the moves of a later search in that regime: a winning move comes first
    best_move = max(wins, key=lambda k: wins[k]["sum_gain"] / wins[k]["tries"]).split("|")[2]
    regime = next(n.regime for n in res.nodes if n.status == "root")
    later = Search(b, store, verifier=verifier)
    probe = type(res.nodes[0])(0, None, None, b.initial()[0], "root", 1.0, regime)
    ordered = [m.name for m in later._ordered_moves(probe)]
    assert ordered[0] == best_move


def s_min_gain():
    return Search.__init__.__kwdefaults__["min_gain"]


def test_branching_continues_the_tree_from_an_earlier_node(store_path, verifier):
    b = _PoorStart("ascend910b", "rms_norm", "bf16", {"ROWS": 24, "D": 64})
    first = Search(b, Store(store_path), max_candidates=2, verifier=verifier).run(use_store=False)
    root = next(n for n in first.nodes if n.status == "root")
    more = Search(b, Store(store_path), max_candidates=2, verifier=verifier).run(branch_from=first, node_id=root.id)
    assert len(more.nodes) > len(first.nodes)
    assert [n.config for n in more.nodes[:len(first.nodes)]] == [n.config for n in first.nodes]
    # no configuration is tried twice across the two sessions
    keys = [space.config_key(n.config) for n in more.nodes]
    assert len(keys) == len(set(keys))


CASES = {
    "rms_norm": {"ROWS": 21, "D": 96},
    "swiglu_limited": {"ROWS": 11, "F": 80},
    "rms_norm_bwd": {"ROWS": 9, "D": 64},
    "rope": {"ROWS": 24, "HD": 64, "RD": 32, "CDIV": 4, "CROWS": 6},
    "mhc_pre": {"ROWS": 5, "N": 4, "HD": 64, "ITERS": 3},
    "swiglu_limited_bwd": {"ROWS": 7, "F": 48},
    "mhc_pre_bwd": {"ROWS": 3, "N": 4, "HD": 32, "ITERS": 2},
}
FAST = ("rms_norm", "mhc_pre")


@pytest.mark.parametrize("pattern", [pytest.param(p, marks=() if p in FAST else pytest.mark.slow) for p in CASES])
@pytest.mark.parametrize("target", ["ascend910b", "ascend910c"])
def test_tuned_never_worse_than_the_cost_model(pattern, target, store_path, verifier):
    res = tune(target, pattern, "bf16", CASES[pattern], max_candidates=3, verifier=verifier)
    root = next(n for n in res.nodes if n.status == "root")
    b = AscendBackend(target, pattern, "bf16", CASES[pattern])
    assert root.config == b.initial()[0]                   # the search starts at the exact solver's choice
    assert res.time_s <= res.baseline_time_s == root.time_s
    assert Store(store_path).get(pattern, CASES[pattern], "bf16", target, b.program.fingerprint())["config"] == res.config


def test_budgets_and_early_stopping(store_path, verifier):
    b = _PoorStart("ascend910b", "rms_norm", "bf16", {"ROWS": 24, "D": 64})
    for bad in ({"time_budget_s": 0.0}, {"time_budget_s": -5.0}, {"max_candidates": 0}, {"max_candidates": -3},
                {"patience": 0}, {"patience": -1}, {"checks": 0}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be positive"):
            Search(b, Store(store_path), verifier=verifier, **bad)
    only_root = Search(b, Store(store_path), time_budget_s=1e-9, verifier=verifier).run(use_store=False)
    assert only_root.stop_reason == "time budget (0 s) used" and len(only_root.nodes) == 1
    two = Search(b, Store(store_path), max_candidates=3, verifier=verifier).run(use_store=False)
    assert two.stop_reason == "candidate budget (3) used" and two.compiled == 3   # root + 2 children
    # nothing can beat a min_gain of 100 %: every child rolls back and patience ends the search
    patient = Search(b, Store(store_path), patience=2, min_gain=1.0, verifier=verifier).run(use_store=False)
    assert patient.stop_reason == "early stop: 2 candidates without an improvement"
    assert [n.status for n in patient.nodes if n.status != "infeasible"] == ["root", "rolled_back", "rolled_back"]
    assert patient.config == patient.baseline_config


def test_a_candidate_that_does_not_build_is_a_failed_node(store_path, verifier):
    b = AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 8, "D": 32})
    cfg = dict(b.initial()[0], rows_per_tile=2)
    broken = Planted("syntax_error", cfg, lambda src: src.replace("Process()", "Process(", 1))
    res = Search(b, Store(store_path), max_candidates=1, verifier=verifier, planted=[broken]).run(use_store=False)
    node = next(n for n in res.nodes if n.move == "planted:syntax_error")
    assert node.status == "failed" and node.reason.startswith("compile: EmulatorCompileError")
    assert res.config == res.baseline_config


def test_calibration_scales_the_pipes_and_is_named_in_the_label(tmp_path):
    from trex.tuning.ascend import AscendCalibration
    cal = tmp_path / "cal.json"
    cal.write_text('{"launch_s": 2e-6, "scales": {"mte2": 2.0, "mte3": 2.0, "gm": 2.0}}')
    shape = {"ROWS": 64, "D": 512}
    plain = AscendBackend("ascend910b", "rms_norm", "bf16", shape)
    fitted = AscendBackend("ascend910b", "rms_norm", "bf16", shape, calibration=AscendCalibration.load(str(cal)))
    cfg = plain.initial()[0]
    p0, p1 = plain.profile(plain.compile(cfg)), fitted.profile(fitted.compile(cfg))
    assert p0["label"] == "modeled (uncalibrated: trex/cost_models/hardware.py constants)"
    assert p1["label"].startswith(f"modeled (calibrated: {cal}, sha256 ")
    assert p1["pipes_s"]["launch"] == 2e-6
    for k in ("mte2", "mte3", "gm"):
        assert p1["pipes_s"][k] == pytest.approx(2 * p0["pipes_s"][k])
    assert p1["pipes_s"]["vec"] == pytest.approx(p0["pipes_s"]["vec"])


def test_configurations_that_run_alike_are_profiled_once():
    b = AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 512, "D": 256})
    # 37 and 38 cores both give 14 rows per core (the launch uses 37); a tile beyond 14 rows is 14 rows
    assert b.canonical({"rows_per_tile": 32, "buffer_depth": 2, "cores": 38}) == \
        {"rows_per_tile": 14, "buffer_depth": 2, "cores": 37}
    assert b.canonical({"rows_per_tile": 2, "buffer_depth": 2, "cores": 43})["cores"] == 43   # 12 rows per core
