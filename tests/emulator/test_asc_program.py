"""Kernel-launch `.asc` programs (kernel + AscendCL host main + `<<<>>>` in one file, asc-devkit's example
layout) built and run as CANN's CPU-debug mode runs them: asc_program.py. The program is trex's own
(tests/emulator/asc_programs/add_blocks: 8 and 3 blocks, one scenario with a tail); device memory is poisoned,
so an output the kernel never writes fails; a GM fault ends the program with the emulator's message."""
from pathlib import Path

import pytest

from trex.codegen_ascendc.emulator import asc_program, compiler_available

ADD = Path(__file__).parent / "asc_programs" / "add_blocks"

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler (g++ or $CXX): the emulator needs one")


def test_translate_launches_rewrites_only_code():
    src = ('// k<<<1, 0, s>>>(x) in a comment\n'
           'foo<A<1>, 3><<<n, 0, s>>>(f(a, b), "<<<");\n'
           'ns::bar <<< 8 , nullptr, stream >>> ( x );\n')
    text, n = asc_program.translate_launches(src)
    assert n == 2
    lines = text.splitlines()
    assert lines[0] == "// k<<<1, 0, s>>>(x) in a comment"  # comments untouched, line count kept
    assert lines[1] == ('::trex_emu::AscLaunch("foo", (n), (s), [=](auto&&... trex_a) { foo<A<1>, 3>(trex_a...); },'
                        'f(a, b), "<<<");')
    assert lines[2] == '::trex_emu::AscLaunch("ns::bar", (8), (stream), [=](auto&&... trex_a) { ns::bar(trex_a...); }, x );'
    assert asc_program.translate_launches("k<<<4, 0>>>();\n")[0] == (
        '::trex_emu::AscLaunch("k", (4), (nullptr), [=](auto&&... trex_a) { k(trex_a...); });\n')
    with pytest.raises(ValueError, match="line 1"):
        asc_program.translate_launches("k<<<1, 0, s>>>;\n")


def test_cmake_and_readme_are_read_as_cmake_and_the_readme_would():
    build = asc_program.parse_cmake(ADD)
    assert [p.name for p in build.sources] == ["add_blocks.asc"]
    assert build.scenario_var == "SCENARIO_NUM" and build.scenarios == ["1", "2"]
    assert build.defines == ["SCENARIO_NUM=1"] and build.arch == "dav-2201"
    assert asc_program.parse_cmake(ADD, {"TAIL_BUG": "ON", "SCENARIO_NUM": "2"}).defines == ["TAIL_BUG=1", "SCENARIO_NUM=2"]
    assert asc_program.parse_cmake(ADD, {"READ_PAST": "ON"}).defines == ["READ_PAST=1", "SCENARIO_NUM=1"]
    run = asc_program.readme_run_block(ADD, "2", "SCENARIO_NUM")
    assert run.gen_args == ["-scenarioNum=2"] and run.demo_args == []
    assert run.verify_args == ["output/output.bin", "output/golden.bin"]
    assert run.overrides == {"SCENARIO_NUM": "2", "CMAKE_ASC_ARCHITECTURES": "dav-2201"}
    assert asc_program._scenario_values("Scenario 0,1,2", "0") == ["0", "1", "2"]
    assert asc_program._scenario_values("ND2NZ scenario (1 or 2)", "1") == ["1", "2"]


@needs_compiler
def test_program_runs_every_scenario_over_several_blocks():
    results = asc_program.run_all_scenarios(ADD)
    assert [(r.scenario, r.result) for r in results] == [("1", "pass"), ("2", "pass")], [r.detail for r in results]
    assert all(r.launches == 1 and not r.findings for r in results)


@needs_compiler
def test_uninitialised_host_locals_read_a_fixed_pattern(tmp_path):
    from trex.codegen_ascendc.emulator.runner import find_compiler
    import subprocess
    flags = asc_program.uninitialized_locals_flags(find_compiler())
    if not flags:
        pytest.skip("the compiler lacks -ftrivial-auto-var-init=pattern (GCC >= 12, clang >= 8)")
    (tmp_path / "u.cpp").write_text('#include <cstdio>\n#include <cstdint>\n'
                                    'void get(uint32_t&) {}\nint main() { uint32_t n; get(n); std::printf("%x", n); }\n')
    subprocess.run([find_compiler(), *flags, str(tmp_path / "u.cpp"), "-o", str(tmp_path / "u")], check=True)
    assert subprocess.run([str(tmp_path / "u")], capture_output=True, text=True).stdout == "fefefefe"


@needs_compiler
def test_unwritten_output_fails_against_the_golden():
    r = asc_program.run_example(ADD, "2", defines={"TAIL_BUG": "ON"})
    assert r.result == "wrong" and "test failed" in r.detail


@needs_compiler
@pytest.mark.parametrize("bounds", ["device", "strict"])
def test_gm_fault_ends_the_program_with_the_emulator_message(bounds):
    r = asc_program.run_example(ADD, "1", bounds=bounds, defines={"READ_PAST": "ON"})
    assert r.result == "run error"
    assert r.detail.startswith("[trex AscendC emulator] add_blocks (block 0 of 8)"), r.detail
    assert "aclrtMalloc" in r.detail or "outside" in r.detail, r.detail


def test_bad_example_dir_is_one_line_exit_2(tmp_path, capsys):
    assert asc_program.main([str(tmp_path)]) == 2
    assert "is not an example directory" in capsys.readouterr().err


def test_membership_rule_selects_vector_programs_that_check_their_result(tmp_path):
    import shutil
    root = tmp_path / "examples" / "01_simd_cpp_api"
    for name, edit in [("member", None), ("on_950", ("dav-2201", "dav-3510")), ("cube", ("AscendC::Add(", "Mmad(")),
                       ("unchecked", ("python3 ../scripts/verify_result.py output/output.bin output/golden.bin", ""))]:
        d = root / "cat" / name
        shutil.copytree(ADD, d)
        if edit:
            for f in [d / "CMakeLists.txt", d / "add_blocks.asc", d / "README.md"]:
                f.write_text(f.read_text().replace(*edit))
    cube_in_header = root / "cat" / "cube_in_header"  # the cube code in a header the .asc includes
    shutil.copytree(ADD, cube_in_header)
    (cube_in_header / "mmad_part.h").write_text("#pragma once\ninline void Part() { Mmad(); }\n")
    asc = cube_in_header / "add_blocks.asc"
    asc.write_text('#include "mmad_part.h"\n' + asc.read_text())
    members, excluded = asc_program.example_membership(tmp_path)
    assert members == ["examples/01_simd_cpp_api/cat/member"]
    assert excluded.pop("examples/01_simd_cpp_api/cat/cube_in_header") == "uses the cube unit"
    assert excluded == {"examples/01_simd_cpp_api/cat/on_950": "built for dav-3510 (Atlas A2/A3 is dav-2201)",
                        "examples/01_simd_cpp_api/cat/cube": "uses the cube unit",
                        "examples/01_simd_cpp_api/cat/unchecked": "checks no result (no verify_result.py, no golden check)"}


@needs_compiler
def test_corpus_entry_of_a_program_runs_every_scenario():
    import time
    from trex.codegen_ascendc.emulator import corpus
    res = corpus.Result("asc/add_blocks", "mirror-cann+asc-devkit", "add_blocks", "no cases", bounds="device", style="program")
    res = corpus._run_program(ADD, res, "device", time.time())
    assert res.result == "pass" and res.keys == [1, 2], res.detail
    assert "| mirror-cann/asc-devkit (kernel-launch programs) | 1 | 1 | 1 |" in corpus.summary([res])
