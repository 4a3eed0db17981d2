"""The store file (buckets, fingerprints, atomic JSON, skills) and the backend hook."""
import json
from importlib.metadata import EntryPoint

import pytest

from trex.compiler import targets
from trex.tuning import harness
from trex.tuning.store import Store, StoreError, backend_lookup, printer_sha256, shape_bucket, store_key


def _entry(program, config, target="ascend910b", sizes=None):
    sizes = sizes or {"ROWS": 37, "D": 256}
    return {"op": "rms_norm", "sizes": sizes, "dtype": "bf16", "target": target, "program": program.name,
            "fingerprint": program.fingerprint(), "config": config, "time_s": 1e-6, "profile": "modeled (test)",
            "baseline": {"config": config, "time_s": 1e-6}, "gain": 0.0, "candidates": 1,
            "kernel_sha256": printer_sha256(target, program, config) or "a cuda kernel's hash"}


def test_bucket_rounds_rows_up_to_a_power_of_two_and_keeps_columns():
    assert shape_bucket({"ROWS": 37, "D": 256}) == "D=256,ROWS<=64"
    assert shape_bucket({"ROWS": 64, "D": 256}) == "D=256,ROWS<=64"
    assert store_key("rms_norm", {"ROWS": 65, "D": 256}, "bf16", "cuda") == "rms_norm|D=256,ROWS<=128|bf16|cuda"


def test_round_trip_is_plain_json_and_checks_the_fingerprint(store_path):
    p = harness.build_program("rms_norm", "bf16")
    s = Store(store_path)
    s.put(_entry(p, {"rows_per_tile": 2, "buffer_depth": 2, "cores": 19}))
    s.save()
    raw = json.loads(store_path.read_text())
    assert raw["format"] == "trex-tuning-store" and "rms_norm|D=256,ROWS<=64|bf16|ascend910b" in raw["configs"]
    again = Store(store_path)
    # same bucket (ROWS 50 <= 64), same IR: found; another IR fingerprint: stale, ignored
    assert again.get("rms_norm", {"ROWS": 50, "D": 256}, "bf16", "ascend910b", p.fingerprint())["config"]["cores"] == 19
    assert again.get("rms_norm", {"ROWS": 50, "D": 256}, "bf16", "ascend910b", "other") is None
    assert again.get("rms_norm", {"ROWS": 65, "D": 256}, "bf16", "ascend910b", p.fingerprint()) is None


def test_a_foreign_file_is_refused_with_the_fix(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ValueError, match="TREX_TUNING_STORE"):
        Store(bad)


def test_skill_scores_rank_moves_by_expected_gain(store_path):
    s = Store(store_path)
    for gain, helped in ((0.2, True), (0.0, False)):
        s.record_skill("ascend", "memory-bound", "cores*2", gain, helped, "rms_norm")
    s.record_skill("ascend", "memory-bound", "buffer_depth=1", 0.0, False, "rms_norm")
    assert s.skill_score("ascend", "memory-bound", "cores*2") == pytest.approx(0.1)   # mean gain 0.2 x win rate 1/2
    assert s.skill_score("ascend", "memory-bound", "buffer_depth=1") == 0.0
    assert s.skill_score("ascend", "vector-bound", "cores*2") is None
    rec = s.data["skills"]["ascend|memory-bound|cores*2"]
    assert (rec["tries"], rec["wins"], rec["ops"]) == (2, 1, ["rms_norm"])


class _FakeEntryPoints:
    """entry_points(group=...) answering the tuning store's provider for trex.tuned_configs."""

    def __call__(self, group=None):
        if group == "trex.tuned_configs":
            return [EntryPoint("store", "trex.tuning.store:backend_lookup", "trex.tuned_configs")]
        return []


def test_backend_hook_reads_the_store(store_path, monkeypatch):
    """codegen asks trex.compiler.targets.tuned_config; the store answers through the entry point."""
    p = harness.build_program("rms_norm", "bf16")
    s = Store(store_path)
    s.put(_entry(p, {"rows_per_tile": 2, "buffer_depth": 2, "cores": 19}))
    s.put(_entry(p, {"rows_per_tile": 4, "col_chunk": None, "num_warps": 2, "num_stages": 1, "programs": None,
                     "reverse_second_pass": True, "second_chunk": None, "hist_scratch": True}, target="cuda"))
    s.save()
    sizes = harness.symbol_sizes({"ROWS": 40, "D": 256})
    assert backend_lookup("ascend910b", p, sizes)["cores"] == 19
    assert backend_lookup("ascend910b", p, harness.symbol_sizes({"ROWS": 40, "D": 512})) is None
    monkeypatch.setattr(targets, "entry_points", _FakeEntryPoints())
    assert targets.tuned_config("ascend910b", p, sizes) == {"rows_per_tile": 2, "buffer_depth": 2, "cores": 19}
    from trex.codegen_triton import tiling
    chosen = tiling.choose(p, sizes)
    assert (chosen.rows_per_tile, chosen.num_warps) == (4, 2)


def test_a_failing_provider_falls_back_with_a_warning(monkeypatch):
    class Broken:
        def __call__(self, group=None):
            return [EntryPoint("broken", "trex.tuning.no_such_module:lookup", "trex.tuned_configs")] \
                if group == "trex.tuned_configs" else []
    monkeypatch.setattr(targets, "entry_points", Broken())
    p = harness.build_program("rms_norm", "bf16")
    with pytest.warns(RuntimeWarning, match="tuned-config provider 'broken' failed"):
        assert targets.tuned_config("ascend910b", p, {}) is None


def test_two_writers_merge_instead_of_overwriting(store_path):
    p = harness.build_program("rms_norm", "bf16")
    a, b = Store(store_path), Store(store_path)          # both read the (empty) file
    a.put(_entry(p, {"rows_per_tile": 1, "buffer_depth": 2, "cores": 8}))
    a.record_skill("ascend", "memory-bound", "cores*2", 0.1, True, "rms_norm")
    a.save()
    b.put(_entry(p, {"rows_per_tile": 1, "buffer_depth": 2, "cores": 8}, sizes={"ROWS": 300, "D": 256}))
    b.record_skill("ascend", "memory-bound", "cores*2", 0.0, False, "swiglu_limited")
    b.save()
    merged = Store(store_path).data
    assert len(merged["configs"]) == 2
    assert merged["skills"]["ascend|memory-bound|cores*2"] == {
        "tries": 2, "wins": 1, "sum_gain": 0.1, "best_gain": 0.1, "ops": ["rms_norm", "swiglu_limited"]}


def test_trex_codegen_takes_the_stored_tiling(store_path, monkeypatch, tmp_path, capsys):
    """`trex codegen` (the AscendC project) uses a stored configuration for its program and shape."""
    from trex.codegen_ascendc.cli import main as codegen_main
    p = harness.build_program("rms_norm", "bf16")
    s = Store(store_path)
    s.put(_entry(p, {"rows_per_tile": 3, "buffer_depth": 2, "cores": 5}, sizes={"ROWS": 64, "D": 256}))
    s.save()
    monkeypatch.setattr(targets, "entry_points", _FakeEntryPoints())
    assert codegen_main(["--pattern", "rms_norm", "--sizes", "ROWS=64,D=256", "--out", str(tmp_path / "p")]) == 0
    assert "rows_per_tile=3 col_chunk=None depth=2 cores=5" in capsys.readouterr().out
    # another bucket: the solver's choice
    assert codegen_main(["--pattern", "rms_norm", "--sizes", "ROWS=200,D=256", "--out", str(tmp_path / "q")]) == 0
    assert "cores=5;" not in capsys.readouterr().out


def test_store_lookups_can_be_switched_off(store_path, monkeypatch):
    p = harness.build_program("rms_norm", "bf16")
    s = Store(store_path)
    s.put(_entry(p, {"rows_per_tile": 2, "buffer_depth": 2, "cores": 19}))
    s.save()
    sizes = harness.symbol_sizes({"ROWS": 37, "D": 256})
    assert backend_lookup("ascend910b", p, sizes) is not None
    monkeypatch.setenv("TREX_TUNING_STORE", "none")
    assert backend_lookup("ascend910b", p, sizes) is None


# ------------------------------------------------------------------------------------------------
# concurrency, corrupt files, modes, how an entry was made, what codegen is served


def _writer(path: str, first: int, n: int) -> None:
    p = harness.build_program("rms_norm", "bf16")
    for i in range(first, first + n):
        s = Store(path)
        s.put(_entry(p, {"rows_per_tile": 1, "buffer_depth": 2, "cores": 8}, sizes={"ROWS": 37, "D": 16 * (i + 1)}))
        s.record_skill("ascend", "memory-bound", "cores*2", 0.0, False, "rms_norm")
        s.save()


def test_concurrent_writers_lose_nothing(store_path):
    """Two processes saving 30 entries each into one store (the issue saw 34 of 60 kept): all 60 are
    there, and every skill try is counted."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(store_path), k * 30, 30)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    data = Store(store_path).data
    assert len(data["configs"]) == 60
    assert data["skills"]["ascend|memory-bound|cores*2"]["tries"] == 60


@pytest.mark.parametrize("text,what", [("", "is empty"), ('{"format": "trex-tuning-store", "vers', "truncated or corrupt"),
                                       ("[1, 2]", "not a trex-tuning-store v1 file"),
                                       ("\x00\x01garbage", "truncated or corrupt")])
def test_a_corrupt_store_is_one_message_naming_the_file(tmp_path, text, what):
    bad = tmp_path / "store.json"
    bad.write_text(text)
    with pytest.raises(StoreError) as e:
        Store(bad)
    msg = str(e.value)
    assert str(bad) in msg and what in msg and "\n" not in msg


def test_a_save_keeps_the_files_mode(store_path):
    p = harness.build_program("rms_norm", "bf16")
    s = Store(store_path)
    s.put(_entry(p, {"rows_per_tile": 1, "buffer_depth": 2, "cores": 8}))
    s.save()
    store_path.chmod(0o644)           # a store shared with the group/others
    s.put(_entry(p, {"rows_per_tile": 2, "buffer_depth": 2, "cores": 8}))
    s.save()
    assert store_path.stat().st_mode & 0o777 == 0o644


def test_an_entry_answers_only_requests_it_was_made_for():
    made = {"max_candidates": 24, "time_budget_s": 300.0, "patience": 12, "checks": 3, "profile": "modeled (uncalibrated)"}
    cut_short = {"made_with": dict(made, max_candidates=2), "stop_reason": "candidate budget (2) used"}
    assert "smaller max_candidates" in Store.why_not_answer(cut_short, made)
    assert Store.why_not_answer(cut_short, dict(made, max_candidates=2)) == ""
    exhausted = {"made_with": dict(made, max_candidates=2), "stop_reason": "every move from every checkpoint tried"}
    assert Store.why_not_answer(exhausted, made) == ""       # a fuller search would find nothing new
    calibrated = {"made_with": dict(made, profile="modeled (calibrated: cal.json, sha256 0123)"), "stop_reason": ""}
    assert "another profile" in Store.why_not_answer(calibrated, made)
    assert "fewer checks" in Store.why_not_answer({"made_with": dict(made, checks=1)}, made)
    assert "does not record" in Store.why_not_answer({"config": {}}, made)


def test_codegen_is_served_only_the_kernel_an_entry_was_timed_with(store_path):
    """An entry measured with another kernel source (a planted variant, an older printer) never reaches
    codegen: the lookup compares the printer's kernel at the entry's configuration with the recorded hash."""
    p = harness.build_program("rms_norm", "bf16")
    s = Store(store_path)
    e = _entry(p, {"rows_per_tile": 2, "buffer_depth": 2, "cores": 19})
    s.put(dict(e, kernel_sha256="0" * 64))
    s.save()
    sizes = harness.symbol_sizes({"ROWS": 40, "D": 256})
    assert backend_lookup("ascend910b", p, sizes) is None
    s.put(e)
    s.save()
    assert backend_lookup("ascend910b", p, sizes) == {"rows_per_tile": 2, "buffer_depth": 2, "cores": 19}
