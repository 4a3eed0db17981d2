import json

import pytest

from trex.training.or_data.decontam import Decontaminator, cached_decontaminator, default_benchmark_root
from trex.training.or_data.dedup import Deduplicator, exact_key, normalize
from trex.training.or_data.families import FAMILIES
from trex.training.or_data.instances import generate_instance


def test_normalize_and_exact():
    assert normalize("  Plant  A ships\n| 3 | 4.5 |  ") == "plant a ships 3 4.5"
    assert exact_key("Plant A ships 3.") == exact_key("plant a   SHIPS 3")
    assert exact_key("ships 3") != exact_key("ships 4")


def test_dedup_layers():
    d = Deduplicator(near_threshold=0.8)
    a = generate_instance("diet", 1, 3)
    b = generate_instance("diet", 2, 3)
    assert d.check_and_add("a", a.text, "s-a") is None
    assert d.check_and_add("b", b.text, "s-b") is None
    assert d.check_and_add("a2", a.text.upper(), "s-x").startswith("exact duplicate")
    assert d.check_and_add("a3", "Totally different words here.", "s-a").startswith("same instance data")
    # change one number in a long text: a near duplicate
    near = a.text.replace("What is", "So what is", 1) + " Thanks."
    assert d.check_and_add("a4", near, "s-y").startswith("near duplicate")
    assert len(d) == 2


def test_distinct_instances_are_not_near_duplicates():
    d = Deduplicator(near_threshold=0.8)
    flagged = 0
    for name in FAMILIES:
        for seed in range(3):
            inst = generate_instance(name, seed)
            flagged += d.check_and_add(inst.uid, inst.text) is not None
    assert flagged == 0


@pytest.fixture(scope="module")
def decontam():
    if not default_benchmark_root().is_dir():
        pytest.skip(f"benchmark folder {default_benchmark_root()} not present")
    return cached_decontaminator()


def test_decontam_reads_every_benchmark(decontam):
    benches = {qid.split("-")[0] for qid, _ in decontam.questions}
    assert {"nl4opt", "mamo_easy", "mamo_complex", "optibench", "optmath_bench", "bench4opt"} <= benches
    assert len(decontam) >= 2215


def test_decontam_flags_benchmark_text(decontam):
    qid, text = decontam.questions[40]
    assert any(h.benchmark_id == qid for h in decontam.check(text))
    words = text.split()
    edited = " ".join(w if i % 9 else w.upper() for i, w in enumerate(words)) + " Answer quickly."
    assert decontam.check(edited)


def test_generated_text_is_clean(decontam):
    hits = [(n, s) for n in FAMILIES for s in range(2) if decontam.check(generate_instance(n, s).text)]
    assert hits == []


def test_decontam_index_cache_gives_the_hits_of_a_fresh_build(tmp_path, monkeypatch):
    """The index is cached per question set (a rebuild, a cached load and an uncached build flag
    the same texts the same way); a damaged cache file is rebuilt, other questions get their own."""
    texts = [generate_instance(name, seed).text for name in ("diet", "knapsack", "transportation") for seed in range(3)]
    root = tmp_path / "benchmarks"
    (root / "mini").mkdir(parents=True)
    (root / "mini" / "mini.jsonl").write_text("".join(json.dumps({"id": f"mini-{k}", "question": t}) + "\n"
                                                      for k, t in enumerate(texts[::2])))
    monkeypatch.setenv("TREX_CACHE_DIR", str(tmp_path / "cache"))
    probes = texts + [t.upper() + " Thanks." for t in texts]

    def hits(d):
        return [[(h.benchmark_id, h.kind, h.score) for h in d.check(p)] for p in probes]

    built = hits(Decontaminator(root))
    files = list((tmp_path / "cache" / "decontam").glob("index-*.npz"))
    assert len(files) == 1
    assert hits(Decontaminator(root)) == built == hits(Decontaminator(root, use_cache=False))
    assert sum(map(bool, built)) >= len(texts[::2]) * 2     # each question and its upper-cased copy
    files[0].write_bytes(b"damaged")
    assert hits(Decontaminator(root)) == built
    (root / "mini" / "mini.jsonl").write_text(json.dumps({"id": "mini-0", "question": texts[1]}) + "\n")
    Decontaminator(root)
    assert len(list((tmp_path / "cache" / "decontam").glob("index-*.npz"))) == 2
