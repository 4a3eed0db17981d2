"""`trex or-data generate` output -> `trex or-eval --benchmark generated:PATH`, and the SFT prompt
format: the exported prompt is the exact text evaluation decodes from."""
import json

import pytest

from trex.training.or_eval import cli
from trex.training.or_eval.benchmarks import RefStatus, load_generated
from trex.training.or_tokenizer import format_prompt

pytest.importorskip("trex.training.or_data.sandbox")

FAMILIES = ("knapsack", "diet")


@pytest.fixture(scope="module")
def generated_dir(tmp_path_factory):
    from trex.training.or_data.pipeline import PipelineConfig, run_pipeline

    out = tmp_path_factory.mktemp("or_data_gen")
    run_pipeline(PipelineConfig(n=3, families=FAMILIES, workers=1, chunk=4, decontaminate=False), out)
    return out


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_generated_sft_loads_with_provenance_reference(generated_dir):
    records = _records(generated_dir / "sft.jsonl")
    problems = cli.load_problems(f"generated:{generated_dir / 'sft.jsonl'}", None, None)
    assert [p.id for p in problems] == [r["id"] for r in records] and len(problems) == 3
    for p, rec in zip(problems, records):
        prov = rec["provenance"]
        assert "objective" not in rec and "status" not in rec   # the reference sits under provenance
        assert p.reference_objective == pytest.approx(prov["objective"], rel=0, abs=0)
        assert p.reference_status is RefStatus.OPTIMAL and prov["status"] == "optimal"
        assert p.family == prov["family"] and p.family in FAMILIES
        # what generate_responses decodes from is what the SFT record trains on
        assert format_prompt(p.question) == rec["prompt"]
    # the output folder of the run works too (its sft.jsonl), and --limit cuts the list
    assert [p.id for p in cli.load_problems(f"generated:{generated_dir}", None, 2)] == [r["id"] for r in records[:2]]


def test_generated_gold_answers_score_correct_and_a_wrong_one_does_not(generated_dir):
    from trex.training.or_eval.evaluate import EvalConfig, SandboxExecutor, evaluate

    records = _records(generated_dir / "sft.jsonl")
    problems = load_generated(generated_dir / "sft.jsonl")
    gold_by_prompt = {r["prompt"]: r["response"] for r in records}
    off_by_one = ("```python\nimport gurobipy as gp\nmodel = gp.Model()\n"
                  f"x = model.addVar(lb={problems[0].reference_objective + 1}, ub={problems[0].reference_objective + 1})\n"
                  "model.setObjective(x)\nmodel.optimize()\n```")

    def respond(questions):
        # keyed by the formatted prompt: a question that did not format to the trained prompt finds no answer
        answers = [gold_by_prompt[format_prompt(q)] for q in questions]
        return [off_by_one] + answers[1:]

    with SandboxExecutor(workers=1) as executor:
        report = evaluate(problems, respond, executor, EvalConfig(workers=1))
    verdicts = [item["correct"]["strict_1e-6"] for item in report["items"]]
    assert verdicts == [False, True, True], [(i["run_status"], i["objective"], i["error"]) for i in report["items"]]
    assert report["native_rules"] == {"generated": "strict_1e-6"}


def test_generated_cpt_file_names_the_sft_file(generated_dir, capsys):
    with pytest.raises(ValueError, match="CPT documents") as err:
        load_generated(generated_dir / "cpt.jsonl")
    assert str(generated_dir / "sft.jsonl") in str(err.value)
    shard = generated_dir / "cpt" / "shard-00000.jsonl"
    with pytest.raises(ValueError, match=str(generated_dir / "sft" / "shard-00000.jsonl")):
        load_generated(shard)
    # the CLI: exit status 2 and the message, before any model is loaded
    assert cli.main(["--benchmark", f"generated:{generated_dir / 'cpt.jsonl'}", "--model", "unused"]) == 2
    err_text = capsys.readouterr().err
    assert "CPT documents" in err_text and str(generated_dir / "sft.jsonl") in err_text


def test_generated_record_shapes(tmp_path):
    from trex.training.or_data.contract import build_prompt

    question = build_prompt("Maximise x subject to x <= 4.")
    rows = [
        # the experiment's test.jsonl: reference at the top level
        {"id": "a", "question": question, "objective": 4.0, "status": "optimal", "family": "f", "split": "seen"},
        # an SFT record written before the prompt carried the markers: its prompt is the question
        {"id": "b", "problem": "Maximise x subject to x <= 4.", "prompt": question, "response": "r",
         "provenance": {"family": "f", "objective": 4.0, "status": "optimal"}},
        # only a formatted prompt: unwrapped
        {"id": "c", "prompt": format_prompt(question), "provenance": {"objective": 4, "status": "optimal"}},
        # an infeasible reference needs no objective
        {"id": "d", "question": question, "provenance": {"objective": None, "status": "infeasible"}},
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = load_generated(path)
    assert [p.question for p in problems] == [question] * 4
    assert [p.reference_objective for p in problems] == [4.0, 4.0, 4.0, None]
    assert problems[3].reference_status is RefStatus.INFEASIBLE and problems[0].split == "seen"
    # a record whose prompt disagrees with its question would train and evaluate on different text
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "e", "question": question, "prompt": format_prompt("other"),
                               "provenance": {"objective": 1.0, "status": "optimal"}}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: .*format_prompt\(question\)"):
        load_generated(bad)
    with pytest.raises(FileNotFoundError, match="trex or-data generate"):
        load_generated(tmp_path / "missing.jsonl")


def test_exported_sft_prompt_is_the_evaluation_prompt(generated_dir, small_tokenizer):
    """The prompt field of an exported SFT record == format_prompt(question) for the question the
    experiment (or_data_source) and `generated:` evaluation decode from, token for token."""
    from trex.training.data import SFTDataset
    from trex.training.or_data.instances import generate_instance
    from trex.training.or_eval.or_data_source import ORDataPipelineSource

    source = ORDataPipelineSource(workers=1)
    records = _records(generated_dir / "sft.jsonl")
    for rec in records:
        prov = rec["provenance"]
        instance = generate_instance(prov["family"], prov["seed"], prov["difficulty"], size_bin=prov["size_bin"])
        assert instance.text == rec["problem"]
        evaluation_question = source.render_prompt(instance.text)
        assert rec["prompt"] == format_prompt(evaluation_question)
        # the training loop's SFT row starts with exactly the ids greedy decoding is prompted with
        ids, first_response = SFTDataset([rec], small_tokenizer, seq_len=4096).rows[0]
        assert ids[:first_response].tolist() == small_tokenizer.encode_prompt(evaluation_question)
