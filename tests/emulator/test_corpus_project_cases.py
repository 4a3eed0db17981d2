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


def test_nms_reference_follows_onnx_greedy_suppression():
    """ONNX NonMaxSuppression: descending score, suppressed when IOU > threshold strictly (equal is kept), boxes as
    any diagonal pair of corners, zero-area boxes never suppress, scores at or below score_threshold dropped."""
    from trex.codegen_ascendc.emulator.corpus_manifest import nms_reference
    boxes = torch.tensor([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [2, 2, 3, 3], [1, 1, 0, 0], [0, 0.5, 1, 1.5], [0, 0, 0, 1]]],
                         dtype=torch.float32)  # B: IOU 0.9/1.1 with A; D = A reversed; E: IOU 1/3 with A and D; F: no area
    scores = torch.tensor([[[0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [0.1, 0.2, 0.3, 0.4, 0.5, 0.95]]])
    assert nms_reference(boxes, scores, 10, 1 / 3, 0.0).tolist() == [
        [0, 0, 0], [0, 0, 2], [0, 0, 4], [0, 0, 5], [0, 1, 5], [0, 1, 4], [0, 1, 3], [0, 1, 2]]
    assert nms_reference(boxes, scores, 2, 1 / 3, 0.0).tolist() == [[0, 0, 0], [0, 0, 2], [0, 1, 5], [0, 1, 4]]
    assert nms_reference(boxes, scores, 10, 0.95, 0.75).tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 5]]
    assert nms_reference(boxes, scores, 0, 0.5, 0.0).shape == (0, 3)


def test_radius_reference_is_gen_data_radius_numpy():
    """examples/AclNNInvocationNaive/gen_data.py radius_numpy: pairs (x row, y row) with distance <= r, per batch of
    ptr_x/ptr_y, x rows in order, at most max_num_neighbors per y row, the y row's own index skipped on request."""
    from trex.codegen_ascendc.emulator.corpus_manifest import radius_reference
    x = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    y = torch.tensor([[0.0, 0.0], [0.0, 1.5]])
    one = (torch.tensor([0, 4]), torch.tensor([0, 2]))
    assert radius_reference(x, y, *one, 1.0, 5, False).tolist() == [[0, 1, 2], [0, 0, 1]]  # distance 1 is in
    assert radius_reference(x, y, *one, 1.0, 1, False).tolist() == [[0, 2], [0, 1]]
    assert radius_reference(x, y, *one, 1.0, 5, True).tolist() == [[1, 2], [0, 1]]
    # batches: y row 1 only sees x rows 2, 3; an empty batch is skipped
    batched = (torch.tensor([0, 2, 2, 4]), torch.tensor([0, 1, 1, 2]))
    assert radius_reference(x, y, *batched, 2.5, 5, False).tolist() == [[0, 1, 2], [0, 0, 1]]


def test_new_reference_cases_build():
    from trex.codegen_ascendc.emulator import corpus_manifest as m
    assert [c.attrs["reduction"] for c in m.mse_loss_cases()] == ["sum", "mean", "mean", "sum"]
    for case in m.non_max_suppression_cases():
        (ref,) = case.expected
        assert ref.dtype == torch.int32 and ref.shape[1] == 3 and case.outputs[0].shape == ref.shape
    for case in m.radius_cases():  # every y row has its max_num_neighbors neighbours (the builder asserts it)
        assert case.expected[0].shape == (2, case.attrs["max_num_neighbors"] * case.inputs[1].shape[0])
