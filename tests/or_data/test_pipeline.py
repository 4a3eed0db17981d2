"""End-to-end pipeline: export format, provenance, resume after interruption, CLI."""
import json

import pytest

from trex.training.or_data.cli import main as cli_main
from trex.training.or_data.decontam import default_benchmark_root
from trex.training.or_data.pipeline import PipelineConfig, run_pipeline
from trex.training.or_tokenizer import format_prompt

FAST = dict(families=("knapsack", "diet", "transportation"), workers=1, chunk=4, decontaminate=False)


def _lines(path):
    return [json.loads(l) for l in path.read_text().splitlines()]


def test_resume_gives_identical_output(tmp_path):
    cfg = PipelineConfig(n=10, **FAST)
    straight = tmp_path / "straight"
    run_pipeline(cfg, straight)
    resumed = tmp_path / "resumed"
    state = run_pipeline(cfg, resumed, stop_after_shards=1)  # "interrupted" after the first shard
    assert state.accepted < cfg.n and not (resumed / "sft.jsonl").exists()
    run_pipeline(cfg, resumed)
    for kind in ("cpt", "sft"):
        a, b = _lines(straight / f"{kind}.jsonl"), _lines(resumed / f"{kind}.jsonl")
        assert len(a) == len(b) == cfg.n
        assert [r["id"] for r in a] == [r["id"] for r in b]
        assert [r.get("text", r.get("response")) for r in a] == [r.get("text", r.get("response")) for r in b]
    assert not [p for p in resumed.rglob(".*") if p.is_file()]  # no temp files left behind


def test_records_carry_provenance(tmp_path):
    run_pipeline(PipelineConfig(n=3, **FAST), tmp_path)
    sft = _lines(tmp_path / "sft.jsonl")
    cpt = _lines(tmp_path / "cpt.jsonl")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert len(sft) == len(cpt) == 3 and manifest["state"]["accepted"] == 3
    for rec in sft:
        prov = rec["provenance"]
        for key in ("family", "seed", "difficulty", "skin", "data", "options", "reference_solver", "status",
                    "objective", "sandbox_backend", "checks_passed", "commit"):
            assert key in prov
        assert {"contract", "data_fidelity", "execution", "status", "objective", "structure",
                "perturbation"} <= set(prov["checks_passed"])
        # the prompt is the evaluation's format of the instruction-wrapped question (trex.training.or_tokenizer)
        assert rec["question"].endswith("### Formulation\n") and rec["response"].startswith("## Variables")
        assert rec["prompt"] == format_prompt(rec["question"]) and rec["problem"] in rec["question"]
    assert cpt[0]["text"].startswith("Problem:\n") and "```python" in cpt[0]["text"]


@pytest.mark.skipif(not default_benchmark_root().is_dir(), reason="benchmarks folder not present")
def test_cli_generate_with_decontamination(tmp_path, capsys):
    out = tmp_path / "cli"
    rc = cli_main(["generate", "--n", "4", "--out", str(out), "--workers", "1", "--chunk", "4",
                   "--families", "set_cover,inventory", "--no-progress"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["accepted"] == 4
    assert len(_lines(out / "sft.jsonl")) == 4
    # running the same command again resumes: nothing left to do, same files
    before = (out / "sft.jsonl").read_text()
    assert cli_main(["generate", "--n", "4", "--out", str(out), "--workers", "1", "--chunk", "4",
                     "--families", "set_cover,inventory", "--no-progress"]) == 0
    assert (out / "sft.jsonl").read_text() == before


def test_bad_config_names_the_fix():
    with pytest.raises(ValueError, match="unknown families"):
        PipelineConfig(families=("cutting_stock",))
    with pytest.raises(ValueError, match="families is empty"):
        PipelineConfig(families=())
    with pytest.raises(ValueError, match=r"unknown difficulties \[7\]"):
        PipelineConfig(difficulties=(7,))
    for name in ("n", "workers", "chunk"):
        with pytest.raises(ValueError, match=f"{name} = 0: must be >= 1"):
            PipelineConfig(**{name: 0})


def test_cli_show_and_backends(capsys):
    assert cli_main(["show", "--family", "knapsack", "--seed", "1", "--difficulty", "1"]) == 0
    out = capsys.readouterr().out
    assert "## Code" in out and '"accepted": true' in out
    assert cli_main(["backends"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sandbox"]["shim"] is True and "unshare_net" in info


def test_every_sample_reports_progress_and_every_rejection_a_reason(tmp_path, monkeypatch):
    import trex.training.or_data.pipeline as pipeline

    real = pipeline.generate_instance

    def flaky(family, seed, difficulty, rejections=None, size_bin=None):   # every third sample finds none
        if seed % 3 == 0:
            rejections.update(status=5, roundtrip=1)
            return None
        return real(family, seed, difficulty, rejections=rejections, size_bin=size_bin)

    monkeypatch.setattr(pipeline, "generate_instance", flaky)
    seen, rejected = [], []
    cfg = PipelineConfig(n=3, families=("knapsack", "diet"), workers=1, chunk=6, perturbations=0, decontaminate=False)
    run_pipeline(cfg, tmp_path / "o", on_sample=seen.append, on_reject=rejected.append)
    # taken in index order; index 5 comes after the 3rd acceptance (index 4): it is not computed
    assert [r["index"] for r in seen] == list(range(5))
    assert [r["index"] for r in rejected] == [0, 3]
    assert all(r["outcome"] == "generation_failed" and "6 draws (rejected: roundtrip 1, status 5)" in r["reason"]
               for r in rejected)


def test_two_workers_stream_the_same_records_as_one(tmp_path, monkeypatch):
    """Samples computed ahead by a pool are taken in index order: the same corpus as a serial run,
    and samples past the n-th acceptance (the rest of the last shard) are not handed out."""
    import trex.training.or_data.pipeline as pipeline

    monkeypatch.setattr(pipeline, "IN_FLIGHT_PER_WORKER", 1)
    cfg = dict(families=("knapsack", "diet"), chunk=8, perturbations=1, decontaminate=False)
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    seen = []
    run_pipeline(PipelineConfig(n=5, workers=1, **cfg), serial)
    state = run_pipeline(PipelineConfig(n=5, workers=2, **cfg), parallel, on_sample=seen.append)
    for kind in ("cpt", "sft"):
        assert (serial / f"{kind}.jsonl").read_text() == (parallel / f"{kind}.jsonl").read_text()
    assert [r["index"] for r in seen] == list(range(len(seen))) and len(seen) < cfg["chunk"]
    assert sum(state.counts.values()) == len(seen) and "surplus" not in state.counts
