"""corpus.ProjectCases: reference cases from an op project's own msopst files (tests/st/*.json), without
compiling anything: one case per dtype variant, inputs in the listed value ranges, in-place outputs compared
on the input, camelCase attributes as the OpDef's snake_case names."""
import json

import torch

from trex.codegen_ascendc.emulator.corpus import ProjectCases

ST = [{
    "case_name": "Test_Scale_001", "op": "Scale",
    "input_desc": [{"name": "x", "type": ["float16", "float"], "shape": [4, 8], "value_range": [[1.0, 2.0]]},
                   {"name": "var", "type": ["int32", "int32"], "shape": [3], "value_range": [[5, 5]]}],
    "output_desc": [{"name": "y", "type": ["float16", "float"], "shape": [4, 8]},
                    {"name": "var", "type": ["int32", "int32"], "shape": [3]}],
    "attr": [{"name": "scaleValue", "type": "float", "value": 3.0}],
}, {"case_name": "fuzz", "op": "Scale", "input_desc": [{"name": "x", "type": ["float"], "shape": "fuzz"}],
    "output_desc": [{"name": "y", "type": ["float"], "shape": "fuzz"}]}]


def _project(tmp_path):
    st = tmp_path / "tests" / "st"
    st.mkdir(parents=True)
    (st / "Scale_case.json").write_text(json.dumps(ST))
    return tmp_path


def test_one_case_per_dtype_variant_with_ranges_attrs_and_in_place_outputs(tmp_path):
    cases = ProjectCases(lambda x, var, scale_value: (x * scale_value, var + 1))(_project(tmp_path))
    assert len(cases) == 2  # the fuzz case is msopst-generated, not a fixed case
    for case, dt in zip(cases, (torch.float16, torch.float32)):
        x, var = case.inputs
        assert x.dtype == dt and x.shape == (4, 8) and bool(((x >= 1) & (x <= 2)).all())
        assert var.dtype == torch.int32 and var.tolist() == [5, 5, 5]
        assert case.attrs == {"scale_value": 3.0}
        assert torch.isnan(case.outputs[0]).all() and torch.equal(case.expected[0], (x.float() * 3).to(dt))
        assert case.compare == [1] and case.expected_inputs[0].tolist() == [6, 6, 6]
    assert cases[0].atol > cases[1].atol  # half's tolerance, then float's


def test_specs_add_cases_and_st_files_can_be_skipped(tmp_path):
    extra = {"input_desc": [{"name": "x", "type": ["float"], "shape": [2], "value": [1.0, 2.0]},
                            {"name": "var", "type": ["int32"], "shape": [1], "value_range": [[0, 0]]}],
             "output_desc": [{"name": "y", "type": ["float"], "shape": [2]}], "attr": []}
    cases = ProjectCases(lambda x, var, out_shape: x.reshape(out_shape), [extra], st_files=False)(_project(tmp_path))
    assert len(cases) == 1 and cases[0].inputs[0].tolist() == [1.0, 2.0] and cases[0].expected[0].tolist() == [1.0, 2.0]


def test_complex64_cases_draw_both_parts_and_compare_each_part(tmp_path):
    from trex.codegen_ascendc.emulator.corpus import _close
    spec = {"input_desc": [{"name": "x", "type": ["complex64"], "shape": [64], "value_range": [[-1.0, 1.0]]}],
            "output_desc": [{"name": "y", "type": ["complex64"], "shape": [64]}], "attr": []}
    (case,) = ProjectCases(lambda x: x * 2, [spec], st_files=False)(tmp_path)
    x = case.inputs[0]
    assert x.dtype == torch.complex64 and bool((x.real.abs() <= 1).all() and (x.imag != 0).any())
    out = case.outputs[0]
    assert torch.isnan(out.real).all() and torch.isnan(out.imag).all()  # poisoned: both parts NaN
    assert _close(case.expected[0], x * 2, case.atol, case.rtol)[0]
    assert not _close((x * 2) + 1j * 1e-3, x * 2, case.atol, case.rtol)[0]  # an imaginary-part error is caught


def test_cmake_host_sources_are_the_op_host_targets_files(tmp_path):
    from trex.codegen_ascendc.emulator.corpus import cmake_host_sources
    (tmp_path / "op_host").mkdir()
    for f in ("pows_tiling.cc", "pows_def.cpp", "aclnn_pow.cpp", "pows_l0.cpp"):
        (tmp_path / "op_host" / f).write_text("")
    cmake = tmp_path / "CMakeLists.txt"
    cmake.write_text("target_sources(optiling PRIVATE\n  op_host/pows_tiling.cc\n)\n"
                     "target_sources(opapi PRIVATE op_host/aclnn_pow.cpp op_host/pows_l0.cpp)\n"
                     "target_sources(op_host_aclnnInner PRIVATE op_host/pows_def.cpp)\n"
                     "target_sources(opsproto PRIVATE op_host/pows_def.cpp)\n")
    assert [p.name for p in cmake_host_sources(tmp_path)] == ["pows_tiling.cc", "pows_def.cpp"]
    cmake.write_text("target_sources(optiling PRIVATE op_host/other_def.cpp)\n")  # names a file the project lacks
    assert cmake_host_sources(tmp_path) is None
    cmake.unlink()
    assert cmake_host_sources(tmp_path) is None
