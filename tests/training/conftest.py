"""Training-area fixtures: small corpora on disk and a config builder for fast CPU runs."""
import json
import random

import pytest

from trex.training.config import load_config


def _sentence(rng: random.Random) -> str:
    subjects = ["the solver", "a model", "the kernel", "every tile", "one stream"]
    verbs = ["reads", "writes", "fuses", "packs", "checks"]
    objects = ["the rows.", "a buffer.", "its inputs.", "the cache.", "two tokens."]
    return f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}"


@pytest.fixture(autouse=True)
def _one_thread(one_intra_op_thread):
    """Every training test runs the tiny model with one intra-op thread (tests/conftest.py says why)."""


@pytest.fixture(scope="session")
def cpt_corpus(tmp_path_factory):
    """Two JSONL shards and a plain-text file of short repetitive sentences (learnable quickly)."""
    root = tmp_path_factory.mktemp("cpt")
    rng = random.Random(0)
    for shard in range(2):
        with open(root / f"shard{shard}.jsonl", "w") as f:
            for _ in range(40):
                f.write(json.dumps({"text": " ".join(_sentence(rng) for _ in range(3))}) + "\n")
    (root / "notes.txt").write_text(" ".join(_sentence(rng) for _ in range(30)))
    return [str(root / "*.jsonl"), str(root / "notes.txt")]


@pytest.fixture(scope="session")
def sft_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("sft")
    rng = random.Random(1)
    with open(root / "pairs.jsonl", "w") as f:
        for _ in range(48):
            a, b = rng.randint(0, 9), rng.randint(0, 9)
            f.write(json.dumps({"prompt": f"{a}+{b}=", "response": str(a + b)}) + "\n")
    return [str(root / "pairs.jsonl")]


@pytest.fixture
def make_config(tmp_path, cpt_corpus):
    """Config for a fast CPU run of the real tiny model (eager, short sequences, no progress bar)."""
    def make(**overrides):
        base = {"model.compile": "eager", "data.paths": cpt_corpus, "data.seq_len": 32,
                "data.micro_batch": 2, "train.steps": 6, "train.device": "cpu",
                "schedule.warmup_steps": 2, "optim.lr": 3e-3, "log.progress": False,
                "log.jsonl": str(tmp_path / "log.jsonl")}
        base.update(overrides)
        return load_config(None, list(base.items()))
    return make
