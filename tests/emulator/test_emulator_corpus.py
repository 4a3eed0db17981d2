"""The public-kernel corpus harness (trex.codegen_ascendc.emulator.corpus): its manifest is well
formed, it runs an op project's cases against references, and it reports the first blocker. The
third-party kernels themselves are not in the repository; this runs trex's own op project."""
import json
import os
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import corpus
from trex.codegen_ascendc.emulator import corpus_manifest
from trex.codegen_ascendc.emulator.corpus_manifest import CORPUS
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


def test_manifest_names_public_sources_with_commits():
    assert len(CORPUS) >= 60
    assert len({e.id for e in CORPUS}) == len(CORPUS)
    for e in CORPUS:
        repo, commit = corpus.SOURCES[e.source]
        assert "/" in repo and len(commit) == 40
        assert e.path.endswith(".cpp") if e.style != "program" else e.path.startswith("examples/01_simd_cpp_api/")


def test_missing_root_is_one_line_exit_2(tmp_path, capsys):
    assert corpus_manifest.main(["--root", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_runs_cases_against_the_reference_and_reports_blocks_and_keys():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    entry = corpus.Entry("trex/scale_add", "kernels", "scale_add_project/op_kernel/scale_add.cpp",
                         corpus.elementwise(lambda x, b: 2 * x + b, 2, shapes=((4, 256), (3, 333))))
    res = corpus.run_entry(KERNELS.parent, entry)
    assert res.result == "pass", res.detail
    assert set(res.keys) == {1, 2} and max(res.blocks) == 8
    wrong = corpus.Entry("trex/scale_add_wrong", "kernels", "scale_add_project/op_kernel/scale_add.cpp",
                         corpus.elementwise(lambda x, b: 3 * x + b, 2, dtypes=(torch.float32,), shapes=((4, 256),)))
    assert corpus.run_entry(KERNELS.parent, wrong).result == "wrong"


def test_first_blocker_names_the_missing_api():
    msg = ("g++ failed to compile k.cpp against the AscendC emulator (exit 1): k.cpp:3:5: the kernel uses `GatherMask`, "
           "which the trex AscendC emulator does not provide (...)\nk.cpp:3:5: error: 'GatherMask' was not declared")
    assert corpus.first_blocker(msg) == "GatherMask (unsupported/undeclared)"


def _result(i, result, detail="", source="mirror-cann+asc-devkit"):
    return corpus.Result(f"k{i}", source, f"k{i}.cpp", result, detail)


def test_summary_counts_per_source_and_first_blocker_kind():
    results = [_result(0, "pass"), _result(1, "pass", source="Hayden727+cann-ops"),
               _result(2, "run error", "k (block 0 of 1): UB overflow: ...", "Hayden727+cann-ops"),
               _result(3, "compile", "op_host: platform/platform_info.h: No such file or directory"),
               _result(4, "excluded", "broken")]
    text = corpus.summary(results)
    assert "**2 of 4 kernels pass (50%); 3 compile unchanged.**" in text
    assert "| Hayden727/cann-ops | 2 | 2 | 1 |" in text and "| mirror-cann/asc-devkit | 2 | 1 | 1 |" in text
    assert "| UB overflow | 1 |" in text and "| host code does not compile or load | 1 |" in text
    assert corpus.blocker_kind(_result(5, "run error", "no rule matches")) == "run error (other)"


def test_report_reprints_an_earlier_run_and_no_root_is_exit_2(tmp_path, capsys):
    runs = tmp_path / "run.json"
    runs.write_text('[{"id": "k0", "source": "mirror-cann+asc-devkit", "path": "k0.cpp", "result": "pass", '
                    '"detail": "1 cases", "blocks": [8], "keys": [0], "seconds": 1.0}]')
    assert corpus_manifest.main(["--report", str(runs)]) == 0
    assert "| k0 | mirror-cann/asc-devkit@82b89a1 `k0.cpp` | pass | [8] / [0] | 1 cases |" in capsys.readouterr().out
    assert corpus_manifest.main([]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# The pass count of the full run docs/emulator.md reports; a later full run must not fall below it.
MEASURED_PASSES = 201     # bench/results/emulator_corpus_94b4ad7.json (session 18)


@pytest.mark.nightly
def test_full_corpus_does_not_regress(tmp_path):
    """The whole manifest (about an hour on 2 cores): every entry gives a result, and at least as many pass
    as the documented run. Needs the SOURCES repositories under $TREX_CORPUS_ROOT."""
    root = os.environ.get("TREX_CORPUS_ROOT")
    if not root:
        pytest.skip("set TREX_CORPUS_ROOT to a directory with corpus.SOURCES cloned as <owner>+<name>/")
    out = tmp_path / "run.json"
    assert corpus_manifest.main(["--root", root, "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    assert [r["id"] for r in results] == [e.id for e in CORPUS]
    assert sum(r["result"] == "pass" for r in results) >= MEASURED_PASSES
