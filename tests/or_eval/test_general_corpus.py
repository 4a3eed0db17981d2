import json

from trex.training.or_eval.general_corpus import EXCLUDED_PARTS, build_general_corpus, iter_stdlib_sources


def test_corpus_is_capped_exactly_and_documented(tmp_path):
    manifest = build_general_corpus(tmp_path / "general.jsonl", max_chars=50_000)
    rows = [json.loads(line) for line in (tmp_path / "general.jsonl").read_text().splitlines()]
    assert sum(len(r["text"]) for r in rows) == manifest["chars"] == 50_000
    assert {r["source"] for r in rows} <= {"python_docs", "stdlib_source"}
    prov = json.loads((tmp_path / "general.manifest.json").read_text())["provenance"]
    assert prov["license"].startswith("Python Software Foundation") and prov["python"]
    again = build_general_corpus(tmp_path / "again.jsonl", max_chars=50_000)
    assert again["sha256"] == manifest["sha256"]   # deterministic


def test_stdlib_sources_skip_tests_and_site_packages():
    for doc in iter_stdlib_sources(max_file_bytes=5_000):
        assert not EXCLUDED_PARTS.intersection(doc.name.split("/"))
        assert doc.name.endswith(".py")
