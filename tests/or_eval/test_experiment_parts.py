"""Fast checks of the ablation driver's pieces (no training): split, corpora, fit filter, statistics."""
import json

import pytest

from trex.training.or_eval.benchmarks import ORProblem, RefStatus
from trex.training.or_eval.experiment import (SEED_BASE, analyse, build_corpora, fit_sft_to_window, preset,
                                         split_families, train_tokenizer)
from trex.training.or_eval.toy_source import ToySource


def test_split_is_disjoint_and_seeded():
    cfg = preset("toy")
    families = ["a", "b", "c", "d", "e"]
    split = split_families(cfg, families)
    assert [len(split[s]) for s in ("seen", "cpt_only", "held_out")] == list(cfg.split_sizes)
    assert len({f for v in split.values() for f in v}) == sum(cfg.split_sizes)
    assert split == split_families(cfg, list(reversed(families)))   # order of the source does not matter
    with pytest.raises(ValueError, match="overlaps"):
        split_families(preset("toy", seen_families=["a"], cpt_only_families=["a"]), families)
    with pytest.raises(ValueError, match="not produced"):
        split_families(preset("toy", seen_families=["zzz"]), families)
    with pytest.raises(ValueError, match="lower split_sizes"):
        split_families(preset("toy", split_sizes=(4, 1, 1)), families)


def test_corpora_respect_the_split_and_the_mixture(tmp_path):
    cfg = preset("toy", seen_families=["cap_max", "floor_min"], cpt_only_families=["pair_max"],
                 held_out_families=["clash"])
    split = split_families(cfg, ToySource().families())
    built = build_corpora(cfg, ToySource(), split, tmp_path)
    data = tmp_path / "data"
    rows = lambda name: [json.loads(line) for line in (data / name).read_text().splitlines()]  # noqa: E731
    assert {r["family"] for r in rows("sft.jsonl")} == {"cap_max", "floor_min"}
    assert {r["family"] for r in rows("cpt_pure.jsonl")} == {"cap_max", "floor_min", "pair_max"}
    balanced = rows("cpt_balanced.jsonl")
    sources = {r["source"] for r in balanced}
    assert "or" in sources and sources & {"python_docs", "stdlib_source"}
    m = built["manifests"]
    assert m["cpt_balanced"]["general_chars"] == int(m["cpt_pure"]["chars"] * cfg.general_share)
    assert abs(m["cpt_balanced"]["general_share_actual"] - cfg.general_share) < 0.1
    assert abs(m["cpt_balanced"]["chars"] - m["cpt_pure"]["chars"]) <= 0.25 * m["cpt_pure"]["chars"]
    problems = built["problems"]
    assert len(problems) == 20 and {p.split for p in problems} == {"seen", "cpt_only", "held_out"}
    assert any(p.reference_status is RefStatus.INFEASIBLE for p in problems)
    # test seeds come from their own range
    assert all(p.meta["seed"] >= SEED_BASE["test"] for p in problems)
    tok, path = train_tokenizer(cfg, tmp_path)
    assert path.is_file()
    fit = fit_sft_to_window(cfg, tok, tmp_path, problems)
    assert fit["rows_dropped_too_long"] == 0 and fit["row_tokens_max"] <= cfg.stage.seq_len + 1
    # the response lengths (eos included) that size max_new_tokens, recounted here
    responses = sorted(len(tok.encode(r["response"])) + 1 for r in rows("sft.jsonl"))
    q = fit["response_tokens_quantiles"]
    assert q["1.0"] == responses[-1] and q["0.5"] == responses[(len(responses) + 1) // 2 - 1]
    assert q["0.5"] <= q["0.9"] <= q["0.95"] <= q["0.99"] <= q["1.0"] < fit["row_tokens_max"]
    tight = preset("toy", stage=type(cfg.stage)(seq_len=8))
    with pytest.raises(ValueError, match="raise stage.seq_len"):
        fit_sft_to_window(tight, tok, tmp_path, problems)


def test_analyse_pairs_arms_on_the_same_items():
    problems = [ORProblem(id=str(i), benchmark="generated", question="q", reference_objective=1.0,
                          reference_status=RefStatus.OPTIMAL, family="f", split=s)
                for i, s in enumerate(["seen"] * 4 + ["cpt_only"] * 4 + ["held_out"] * 2)]
    base = [True, True, False, False, False, False, False, False, False, False]
    better = [True, True, True, False, True, True, True, True, False, False]
    verdicts = {"sft_only": {"strict_1e-6": base, "legacy_5pct_rounded": base},
                "cpt_pure_sft": {"strict_1e-6": better, "legacy_5pct_rounded": better}}
    a = analyse(problems, verdicts)["rules"]["strict_1e-6"]
    assert a["pass_at_1"]["cpt_pure_sft"]["cpt_only"]["rate"] == 1.0
    assert a["pass_at_1"]["sft_only"]["cpt_only"]["rate"] == 0.0
    mc = a["mcnemar_vs_sft_only"]["cpt_pure_sft"]["cpt_only"]
    assert (mc["only_a"], mc["only_b"], mc["n"]) == (4, 0, 4) and mc["p_value"] == pytest.approx(0.125)
    assert a["mcnemar_vs_sft_only"]["cpt_pure_sft"]["all"]["only_a"] == 5
