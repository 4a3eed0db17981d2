"""The corpus: public AscendC op-project kernels (see corpus.py for how they run). Paths are inside
the repositories of corpus.SOURCES at the commits listed there; nothing of them is committed here.

    python -m trex.codegen_ascendc.emulator.corpus_manifest --root DIR [--only ID ...] [--json OUT.json]

runs every entry (the command lives here, not in corpus.py, so that the harness never imports its
manifest: the import graph stays a tree)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from . import corpus
from .corpus import TOL, Case, Entry, _gen, elementwise, markdown, poison, run_entry

F16, F32, I32 = torch.float16, torch.float32, torch.int32
HOMEWORK, S3, CONTEST = "KiaraStark+ascendc-homework", "linnlh+ascendc-competition-s3", "hansheng1001+AscendCContest"
S2, S4, XSH, JEFF, DEVKIT = ("Youshikawa+ascendC-S2", "A-Y-1+AscendC-S4", "xsh20021105+AscendC-S3",
                             "JeffDing+AscendC_Code", "mirror-cann+asc-devkit")
ACL = "examples/01_simd_cpp_api/02_features/99_acl_based/00_acl_compilation/"


def fast_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def fast_gelu_grad(dy, x):
    s = torch.sigmoid(1.702 * x)
    return dy * (s + 1.702 * x * s * (1 - s))


def tanh_gelu(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def xlogy(x, y):
    return torch.xlogy(x, y)


# A half reduction of ~16K terms with half partials is ~1e-2 relative off the float result.
HALF_REDUCTION_RTOL = 3e-2


def reduction_cases(fn, dtypes=(F16, F32), shapes=((8, 2048), (3, 333)), out_shape=(), lo=-2.0, hi=2.0, n_in=1,
                    tol_scale=4.0, attrs=None):
    """Cases for a reduction to `out_shape` (a scalar by default)."""
    def build():
        cases = []
        for dt in dtypes:
            for si, shape in enumerate(shapes):
                ins = [_gen(shape, dt, lo, hi, seed=si * 5 + k) for k in range(n_in)]
                ref = fn(*[x.float() for x in ins]).reshape(out_shape)
                atol, rtol = TOL[dt]
                rtol = HALF_REDUCTION_RTOL if dt == F16 else rtol * tol_scale
                cases.append(Case(ins, [poison(out_shape, dt)], [ref.to(dt)], dict(attrs or {}), atol * tol_scale, rtol))
        return cases
    return build


def addcmul_cases():
    cases = []
    for dt in (F16, F32):
        for si, shape in enumerate(((8, 2048), (3, 333))):
            a, b, c = (_gen(shape, dt, seed=si * 3 + k) for k in range(3))
            v = torch.tensor([0.5], dtype=dt)
            ref = (a.float() + 0.5 * b.float() * c.float()).to(dt)
            cases.append(Case([v, a, b, c], [poison(shape, dt)], [ref], {}, *TOL[dt]))
    return cases


def clip_cases():
    cases = []
    for dt in (F16, F32):
        for si, shape in enumerate(((8, 2048), (3, 333))):
            x = _gen(shape, dt, seed=si)
            lo_, hi_ = torch.tensor([-0.5], dtype=dt), torch.tensor([0.75], dtype=dt)
            cases.append(Case([x, lo_, hi_], [poison(shape, dt)], [x.clamp(-0.5, 0.75)], {}, *TOL[dt]))
    return cases


def compare_cases(fn, dtypes=(F16, F32), shapes=((8, 2048), (3, 333)), attrs=None, equal_frac=0.3):
    """Boolean-output comparisons; a fraction of the elements equal so both outcomes occur."""
    def build():
        cases = []
        for dt in dtypes:
            for si, shape in enumerate(shapes):
                a = _gen(shape, dt, seed=si)
                b = _gen(shape, dt, seed=si + 100)
                mask = torch.rand(shape, generator=torch.Generator().manual_seed(si)) < equal_frac
                b = torch.where(mask, a, b)
                ref = fn(a, b, **(attrs or {}))
                cases.append(Case([a, b], [poison(shape, torch.bool)], [ref], {}, 0, 0))
        return cases
    return build


def isclose_cases():
    cases = []
    for dt in (F16, F32):
        for si, shape in enumerate(((8, 2048), (3, 333))):
            a = _gen(shape, dt, seed=si)
            b = (a.float() + torch.randn(shape, generator=torch.Generator().manual_seed(si)) * 1e-3).to(dt)
            ref = torch.isclose(a.float(), b.float(), rtol=1e-5, atol=1e-8)
            cases.append(Case([a, b], [poison(shape, torch.bool)], [ref], {"rtol": 1e-5, "atol": 1e-8, "equal_nan": False}, 0, 0))
    return cases


def tri_cases(fn):
    def build():
        cases = []
        for dt in (F16, F32):
            for shape, diag in (((64, 64), 0), ((3, 40, 56), 2), ((33, 17), -3)):
                x = _gen(shape, dt, seed=diag + 5)
                cases.append(Case([x], [poison(shape, dt)], [fn(x, diag)], {"diagonal": diag}, 0, 0))
        return cases
    return build


def softmax_cases(dim_attr="dim"):
    def build():
        cases = []
        for dt in (F16, F32):
            for si, shape in enumerate(((8, 1024), (16, 64), (5, 3, 40))):
                x = _gen(shape, dt, -3, 3, seed=si)
                ref = torch.softmax(x.float(), -1).to(dt)
                atol, rtol = TOL[dt]
                cases.append(Case([x], [poison(shape, dt)], [ref], {dim_attr: -1}, atol * 4, rtol * 4))
        return cases
    return build


def softmax_max_sum_cases():
    """SoftmaxCustom (outputs max, sum, z): z = softmax over the last axis; max/sum = each row's max and
    sum of exp(x - max), repeated over one 32-byte block (8 floats) per row, as the SoftMax API writes
    them. float only: the kernel sizes max/sum at 8 elements per row, the float block."""
    cases = []
    for si, shape in enumerate(((80, 64), (40, 1024), (45, 256))):
        x = _gen(shape, F32, -3, 3, seed=si)
        mx = x.max(-1, keepdim=True).values
        ssum = torch.exp(x - mx).sum(-1, keepdim=True)
        rows = shape[0]
        cases.append(Case([x], [poison((rows, 8), F32), poison((rows, 8), F32), poison(shape, F32)],
                          [mx.expand(rows, 8).contiguous(), ssum.expand(rows, 8).contiguous(), torch.softmax(x, -1)],
                          {}, 1e-5, 1e-5))
    return cases


def logsumexp_cases(attrs_of):
    def build():
        cases = []
        for dt in (F16, F32):
            for si, shape in enumerate(((8, 1024), (16, 64))):
                x = _gen(shape, dt, -3, 3, seed=si)
                ref = torch.logsumexp(x.float(), dim=-1).to(dt)
                atol, rtol = TOL[dt]
                cases.append(Case([x], [poison(ref.shape, dt)], [ref], attrs_of(len(shape)), atol * 8, rtol * 8))
        return cases
    return build


def layer_norm_cases():
    cases = []
    for si, (rows, cols) in enumerate(((16, 1024), (8, 4096))):
        x = _gen((rows, cols), F32, seed=si)
        g, b = _gen((cols,), F32, seed=si + 1), _gen((cols,), F32, seed=si + 2)
        ref = torch.nn.functional.layer_norm(x, (cols,), g, b, 1e-5)
        cases.append(Case([x, g, b], [poison((rows, cols), F32)], [ref], {"epsilon": 1e-5}, 1e-4, 1e-4))
    return cases


def mse_grad_cases():
    cases = []
    for dt in (F16, F32):
        for si, shape in enumerate(((8, 2048), (3, 333))):
            p, lab, dout = (_gen(shape, dt, seed=si * 3 + k) for k in range(3))
            ref = (2 * (p.float() - lab.float()) * dout.float() / p.numel()).to(dt)
            atol, rtol = TOL[dt]
            cases.append(Case([p, lab, dout], [poison(shape, dt)], [ref], {"reduction": "mean"}, atol, rtol * 4))
    return cases


def global_avg_pool_cases():
    cases = []
    for dt in (F16, F32):
        for si, shape in enumerate(((2, 3, 16, 16), (1, 8, 7, 9))):
            x = _gen(shape, dt, seed=si)
            ref = x.float().mean(dim=(2, 3), keepdim=True).to(dt)
            atol, rtol = TOL[dt]
            cases.append(Case([x], [poison(ref.shape, dt)], [ref], {}, atol * 4, rtol * 4))
    return cases


def heaviside_cases():
    cases = []
    for dt in (F32, F16):
        for si, shape in enumerate(((8, 2048), (3, 333))):
            x = _gen(shape, dt, seed=si).round()
            v = _gen(shape, dt, seed=si + 9)
            cases.append(Case([x, v], [poison(shape, dt)], [torch.heaviside(x, v)], {}, 0, 0))
    return cases


def asinh_grad_cases():
    cases = []
    for dt in (F16, F32):
        for si, shape in enumerate(((8, 2048), (3, 333))):
            y, dy = _gen(shape, dt, seed=si), _gen(shape, dt, seed=si + 3)
            ref = (dy.float() / torch.cosh(y.float())).to(dt)
            atol, rtol = TOL[dt]
            cases.append(Case([y, dy], [poison(shape, dt)], [ref], {}, atol * 4, rtol * 4))
    return cases


def histogram_cases():
    cases = []
    for si, n in enumerate((4096, 1000)):
        x = _gen((n,), F32, 0, 10, seed=si)
        ref = torch.histc(x, bins=100, min=0, max=10)
        cases.append(Case([x], [poison((100,), F32)], [ref], {"bins": 100, "min": 0.0, "max": 10.0}, 0, 0))
    return cases


def eye_cases():
    cases = []
    for dt in (F32, F16):
        for shape in ((16, 16), (20, 33), (2, 8, 12)):
            y = poison(shape, dt)  # Eye writes its input in place (the OpDef has no output)
            ref = torch.zeros(shape, dtype=dt)
            n = min(shape[-2:])
            ref[..., range(n), range(n)] = 1
            cases.append(Case([y], [], [], {"num_rows": shape[-2], "num_columns": shape[-1],
                                            "batch_shape": list(shape[:-2]), "dtype": 0}, 0, 0,
                              compare=[0], expected_inputs=[ref]))
    return cases


def scatter_cases(kind: str, out_listed: bool, dtypes=(F32, F16)):
    """ScatterSub/ScatterMax (TF semantics): var[index[i], ...] op= update[i, ...], unique indices, in place.
    out_listed: the OpDef lists var as an output too (the kernel gets a second pointer to it)."""
    def build():
        cases = []
        for dt in dtypes:
            for si, (rows, cols, n) in enumerate(((64, 32, 20), (17, 40, 9), (256, 16, 100))):
                var = _gen((rows, cols), dt, seed=si)
                idx = torch.randperm(rows, generator=torch.Generator().manual_seed(si))[:n].to(I32)
                upd = _gen((n, cols), dt, seed=si + 50)
                ref = var.clone().float()
                if kind == "sub":
                    ref[idx.long()] -= upd.float()
                else:
                    ref[idx.long()] = torch.maximum(ref[idx.long()], upd.float())
                atol, rtol = TOL[dt]
                cases.append(Case([var, idx, upd], [var] if out_listed else [], [ref.to(dt)] if out_listed else [],
                                  {}, atol, rtol, compare=None if out_listed else [0],
                                  expected_inputs=[] if out_listed else [ref.to(dt)]))
        return cases
    return build


def scatter_elements_cases(dtypes=(F32, F16)):
    """ScatterElements (ONNX, reduce "None"): var[i][index[i][j]] = updates[i][j] along axis 1 (or 0),
    in place; each row's indices are distinct so the result does not depend on the order."""
    def build():
        cases = []
        for dt in dtypes:
            for si, (rows, cols, k, axis) in enumerate(((8, 64, 16, 1), (32, 24, 8, 0))):
                var = _gen((rows, cols), dt, seed=si)
                g = torch.Generator().manual_seed(si)
                if axis == 1:
                    idx = torch.stack([torch.randperm(cols, generator=g)[:k] for _ in range(rows)]).to(I32)
                    upd = _gen((rows, k), dt, seed=si + 9)
                else:
                    idx = torch.stack([torch.randperm(rows, generator=g)[:k] for _ in range(cols)], 1).to(I32)
                    upd = _gen((k, cols), dt, seed=si + 9)
                ref = var.clone().scatter_(axis, idx.long(), upd)
                cases.append(Case([var, idx, upd], [], [], {"axis": axis, "reduce": "None"}, 0, 0,
                                  compare=[0], expected_inputs=[ref]))
        return cases
    return build


def replication_pad_cases(dtypes=(F32, F16)):
    def build():
        cases = []
        for dt in dtypes:
            for si, (shape, pads) in enumerate((((2, 3, 8, 16), (1, 2, 3, 1)), ((1, 4, 5, 7), (2, 2, 0, 3)))):
                x = _gen(shape, dt, seed=si)
                ref = torch.nn.functional.pad(x.float(), pads, mode="replicate").to(dt)
                cases.append(Case([x, torch.tensor(pads, dtype=I32)], [poison(ref.shape, dt)], [ref], {}, 0, 0))
        return cases
    return build


def cumsum_cases():
    cases = []
    for dt in (F32, F16):
        for si, (shape, axis) in enumerate((((8, 128), 1), ((16, 32), 0), ((4, 6, 40), 2))):
            x = _gen(shape, dt, seed=si)
            ref = torch.cumsum(x.float(), axis).to(dt)
            atol, rtol = TOL[dt]
            cases.append(Case([x, torch.tensor([axis], dtype=I32)], [poison(shape, dt)], [ref],
                              {"exclusive": False, "reverse": False}, atol * 8,
                              HALF_REDUCTION_RTOL if dt == F16 else rtol * 8))  # a running sum in half
    return cases


def reduce_sum_cases():
    cases = []
    for dt in (F32, F16):
        for si, (shape, axes) in enumerate((((8, 256), [1]), ((16, 32), [0]), ((4, 6, 40), [2]))):
            x = _gen(shape, dt, seed=si)
            ref = x.float().sum(dim=axes).to(dt)
            atol, rtol = TOL[dt]
            cases.append(Case([x, torch.tensor(axes, dtype=I32)], [poison(ref.shape, dt)], [ref],
                              {"keep_dims": False, "ignore_nan": False, "dtype": "float"}, atol * 8,
                              HALF_REDUCTION_RTOL if dt == F16 else rtol * 8))
    return cases


def nll_loss_cases():
    cases = []
    for si, (n, c) in enumerate(((32, 16), (64, 100))):
        x = _gen((n, c), F32, -3, 0, seed=si)
        target = torch.randint(0, c, (n,), generator=torch.Generator().manual_seed(si)).to(I32)
        weight = _gen((c,), F32, 0.5, 1.5, seed=si + 1)
        ref = torch.nn.functional.nll_loss(x, target.long(), weight, reduction="mean")
        cases.append(Case([x, target, weight], [poison((), F32)], [ref], {"reduction": "mean", "ignore_index": -100},
                          1e-5, 1e-4))
    return cases


def spence(x):
    import numpy as np
    from scipy.special import spence as sp  # the reference only: Spence's function has no torch op
    return torch.from_numpy(np.asarray(sp(x.double().numpy()))).float()


def ew(fn, n, **kw):
    return elementwise(fn, n, **kw)


CORPUS: list[Entry] = [
    # --- hansheng1001/AscendCContest: contest op projects (framework launch, tiling keys per dtype)
    Entry("contest/addcmul", CONTEST, "01Addcmul/FrameworkLaunch/Addcmul/op_kernel/addcmul.cpp", addcmul_cases),
    Entry("contest/fast_gelu", CONTEST, "02FastGelu/FrameworkLaunch/FastGelu/op_kernel/fast_gelu.cpp", ew(fast_gelu, 1)),
    Entry("contest/fast_gelu_grad", CONTEST, "03FastGeluGrad/FrameworkLaunch/FastGeluGrad/op_kernel/fast_gelu_grad.cpp",
          ew(fast_gelu_grad, 2, tol_scale=4)),
    Entry("contest/less_equal", CONTEST, "04LessEqual/FrameworkLaunch/LessEqual/op_kernel/less_equal.cpp",
          compare_cases(torch.le)),
    Entry("contest/less_equal_v2", CONTEST, "04LessEqual/FrameworkLaunch/LessEqualV2/op_kernel/less_equal.cpp",
          compare_cases(torch.le)),
    # mse_loss writes per-block partial results whose output layout the project does not document
    Entry("contest/mse_loss", CONTEST, "05MseLoss/FrameworkLaunch/MseLoss/op_kernel/mse_loss.cpp"),
    Entry("contest/mse_loss_grad", CONTEST, "06MseLossGrad/FrameworkLaunch/MseLossGrad/op_kernel/mse_loss_grad.cpp",
          mse_grad_cases),
    Entry("contest/clip_by_value", CONTEST, "07ClipByValue/FrameworkLaunch/ClipByValue/op_kernel/clip_by_value.cpp", clip_cases),
    Entry("contest/lp_norm_v2", CONTEST, "08LpNormV2/FrameworkLaunch/LpNormV2/op_kernel/lp_norm_v2.cpp",
          reduction_cases(lambda x: x.norm(), attrs={"p": 2.0})),
    Entry("contest/spence", CONTEST, "09Spence/FrameworkLaunch/Spence/op_kernel/spence.cpp",
          ew(spence, 1, lo=0.05, hi=4.0, tol_scale=8)),
    Entry("contest/scatter_sub", CONTEST, "10ScatterSub/FrameworkLaunch/ScatterSub/op_kernel/scatter_sub.cpp",
          scatter_cases("sub", out_listed=True)),
    Entry("contest/scatter_sub_v0.2", CONTEST, "10ScatterSub/FrameworkLaunch/ScatterSub_v0.2/op_kernel/scatter_sub.cpp",
          scatter_cases("sub", out_listed=False)),
    Entry("contest/scatter_sub_v1", CONTEST,
          "10ScatterSub/FrameworkLaunch/ScatterSub_v1/FrameworkLaunch/ScatterSub/op_kernel/scatter_sub.cpp",
          scatter_cases("sub", out_listed=False)),
    Entry("contest/scatter_max", CONTEST, "11ScatterMax/FrameworkLaunch/ScatterMax/op_kernel/scatter_max.cpp",
          scatter_cases("max", out_listed=True)),
    # --- linnlh/ascendc-competition-s3 (season 3 contest entries)
    Entry("s3-linnlh/asinh", S3, "basic/asinh/asinh/op_kernel/asinh.cpp", ew(torch.asinh, 1, tol_scale=4)),
    Entry("s3-linnlh/asinh_grad", S3, "basic/asinh_grad/asinh_grad/op_kernel/asinh_grad.cpp", asinh_grad_cases),
    Entry("s3-linnlh/div", S3, "basic/div/div/op_kernel/div.cpp", ew(torch.div, 2, lo=0.5, hi=2.0)),
    Entry("s3-linnlh/is_close", S3, "basic/is_close/is_close/op_kernel/is_close.cpp", isclose_cases),
    Entry("s3-linnlh/log_sum_exp", S3, "basic/logsum_exp/logsum_exp/op_kernel/log_sum_exp.cpp",
          logsumexp_cases(lambda nd: {"dim": [nd - 1], "keep_dim": False})),
    Entry("s3-linnlh/non_max_suppression", S3,
          "basic/non_max_suppression/non_max_suppression/op_kernel/non_max_suppression.cpp"),
    Entry("s3-linnlh/not_equal", S3, "basic/not_equal/not_equal/op_kernel/not_equal.cpp", compare_cases(torch.ne)),
    Entry("s3-linnlh/replication_pad2d", S3, "basic/replication_pad2d/replication_pad2d/op_kernel/replication_pad2d.cpp",
          replication_pad_cases()),
    Entry("s3-linnlh/scatter_elements", S3, "basic/scatter_elements/scatter_elements/op_kernel/scatter_elements.cpp",
          scatter_elements_cases()),
    Entry("s3-linnlh/softmax", S3, "basic/softmax/softmax/op_kernel/softmax.cpp", softmax_cases()),
    Entry("s3-linnlh/nll_loss", S3, "perf/nll_loss/nll_loss/op_kernel/nll_loss.cpp", nll_loss_cases),
    # --- KiaraStark/ascendc-homework: another author's season 3 entries, course homework, samples
    Entry("s3-kiara/softmax", HOMEWORK, "Ascend_S3-main/01Softmax/op_kernel/softmax.cpp", softmax_cases()),
    Entry("s3-kiara/div", HOMEWORK, "Ascend_S3-main/02Div/op_kernel/div.cpp", ew(torch.div, 2, lo=0.5, hi=2.0)),
    Entry("s3-kiara/not_equal", HOMEWORK, "Ascend_S3-main/03NotEqual/op_kernel/not_equal.cpp", compare_cases(torch.ne)),
    Entry("s3-kiara/asinh", HOMEWORK, "Ascend_S3-main/04Asinh/op_kernel/asinh.cpp", ew(torch.asinh, 1, tol_scale=4)),
    Entry("s3-kiara/asinh_grad", HOMEWORK, "Ascend_S3-main/05AsinhGrad/op_kernel/asinh_grad.cpp", asinh_grad_cases),
    Entry("s3-kiara/scatter_elements", HOMEWORK, "Ascend_S3-main/06ScatterElements/op_kernel/scatter_elements.cpp",
          scatter_elements_cases()),
    Entry("s3-kiara/is_close", HOMEWORK, "Ascend_S3-main/08IsClose/op_kernel/is_close.cpp", isclose_cases),
    Entry("s3-kiara/log_sum_exp", HOMEWORK, "Ascend_S3-main/09LogSumExp/op_kernel/log_sum_exp.cpp",
          logsumexp_cases(lambda nd: {"dim": [nd - 1], "keep_dim": False})),
    Entry("s3-kiara/replication_pad2d", HOMEWORK, "Ascend_S3-main/10ReplicationPad2d/op_kernel/replication_pad2d.cpp",
          replication_pad_cases()),
    Entry("homework/softmax", HOMEWORK, "1_SoftMax/softmax/op_kernel/softmax_custom.cpp", softmax_max_sum_cases),
    # (2_ScatterElements is a verbatim copy of s3-linnlh/scatter_elements: counted once)
    Entry("homework/log_sum_exp", HOMEWORK, "3_LogSumExp/LogSumExp/op_kernel/log_sum_exp.cpp",
          logsumexp_cases(lambda nd: {"dim": [nd - 1], "keep_dim": False})),
    Entry("homework/layer_norm", HOMEWORK, "LayerNormCustomSample/FrameworkLaunch/LayerNormCustom/op_kernel/layer_norm_custom.cpp",
          layer_norm_cases),
    Entry("homework/scatter_sub", HOMEWORK, "ScatterSubSample/FrameworkLaunch/ScatterSub/op_kernel/scatter_sub.cpp",
          scatter_cases("sub", out_listed=False)),
    # --- xsh20021105/AscendC-S3: a third author's season 3 entries
    Entry("s3-xsh/softmax", XSH, "01-Softmax/op_kernel/softmax.cpp", softmax_cases()),
    Entry("s3-xsh/not_equal", XSH, "03-NotEqual/op_kernel/not_equal.cpp", compare_cases(torch.ne)),
    Entry("s3-xsh/asinh", XSH, "04-Asinh/op_kernel/asinh.cpp", ew(torch.asinh, 1, tol_scale=4)),
    Entry("s3-xsh/scatter_elements", XSH, "06-ScatterElements/op_kernel/scatter_elements.cpp", scatter_elements_cases()),
    Entry("s3-xsh/log_sum_exp", XSH, "09-LogSumExp/op_kernel/log_sum_exp.cpp",
          logsumexp_cases(lambda nd: {"dim": [nd - 1], "keep_dim": False})),
    # --- Youshikawa/ascendC-S2: season 2 entries
    Entry("s2/as_strided", S2, "ascends2/AsStrided/AsStrided/op_kernel/as_strided.cpp"),
    Entry("s2/cumsum", S2, "ascends2/Cumsum/Cumsum/op_kernel/cumsum.cpp", cumsum_cases),
    Entry("s2/gelu", S2, "ascends2/Gelu/Gelu/op_kernel/gelu.cpp", ew(tanh_gelu, 1, tol_scale=4)),
    Entry("s2/global_avg_pool", S2, "ascends2/GlobalAvgPool/GlobalAvgPool/op_kernel/global_avg_pool.cpp",
          global_avg_pool_cases),
    Entry("s2/histogram", S2, "ascends2/Histogram/Histogram/op_kernel/histogram.cpp", histogram_cases),
    Entry("s2/lerp", S2, "ascends2/Lerp/Lerp/op_kernel/lerp.cpp", ew(lambda s, e, w: s + w * (e - s), 3, tol_scale=2)),
    Entry("s2/reduce_sum", S2, "ascends2/ReduceSum/ReduceSum/op_kernel/reduce_sum.cpp", reduce_sum_cases),
    Entry("s2/three_nn", S2, "ascends2/ThreeNN/ThreeNN/op_kernel/three_nn.cpp"),
    Entry("s2/tril", S2, "ascends2/Tril/Tril/op_kernel/tril.cpp", tri_cases(torch.tril)),
    Entry("s2/triu", S2, "ascends2/Triu/Triu/op_kernel/triu.cpp", tri_cases(torch.triu)),
    Entry("s2/xlogy", S2, "ascends2/xlogy/op_kernel/xlogy.cpp", ew(xlogy, 2, lo=0.1, hi=3.0, tol_scale=4)),
    # --- A-Y-1/AscendC-S4: season 4 entries (the MatMul entry is a cube kernel, out of scope)
    Entry("s4/eye", S4, "Eye/op_kernel/eye.cpp", eye_cases),
    Entry("s4/heaviside", S4, "Heaviside/op_kernel/heaviside.cpp", heaviside_cases),
    # --- JeffDing/AscendC_Code: sinh sample, two tilings
    Entry("jeff/sinh", JEFF, "SinhCustomSample/FrameworkLaunch/SinhCustom/op_kernel/sinh_custom.cpp",
          ew(torch.sinh, 1, dtypes=(F16,), tol_scale=4)),
    Entry("jeff/sinh_segmentation", JEFF, "SinhCustomSample/FrameworkLaunch/SinhCustomSegmentation/op_kernel/sinh_custom.cpp",
          ew(torch.sinh, 1, dtypes=(F16,), tol_scale=4)),
    # --- Huawei's asc-devkit examples (ACL-based op projects)
    # the asc-devkit samples compile their tile length in (STATIC_TILE_LENGTH = 128, 8 tiles x 2 buffers per
    # block) and assert the runtime one matches: 8 blocks x 2048 elements is the shape they are written for
    Entry("devkit/add_custom", DEVKIT, ACL + "custom_op/op_kernel/add_custom/add_custom_kernel.cpp",
          ew(torch.add, 2, shapes=((8, 2048),))),
    Entry("devkit/add_custom_template", DEVKIT, ACL + "custom_op/op_kernel/add_custom_template/add_custom_template.cpp",
          ew(torch.add, 2), style="template"),
    Entry("devkit/add_custom_tiling_sink", DEVKIT,
          ACL + "custom_op/op_kernel/add_custom_tiling_sink/add_custom_tiling_sink_kernel.cpp",
          # float only (its OpDef); 8 blocks x 6 tiles of the compiled tile length 8: 384 elements
          ew(torch.add, 2, dtypes=(F32,), shapes=((8, 48),))),
    Entry("devkit/leaky_relu_custom", DEVKIT, ACL + "custom_op/op_kernel/leaky_relu_custom/leaky_relu_custom_kernel.cpp",
          ew(lambda x: torch.nn.functional.leaky_relu(x, 0.0), 1, dtypes=(F32,), shapes=((8, 2048),))),  # OpDef default slope
    Entry("devkit/leaky_relu_package", DEVKIT,
          ACL + "parallel_ops_package/leaky_relu_custom/op_kernel/leaky_relu_custom/leaky_relu_custom_kernel.cpp",
          ew(lambda x: torch.nn.functional.leaky_relu(x, 0.0), 1, dtypes=(F32,), shapes=((8, 2048),))),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trex.codegen_ascendc.emulator.corpus_manifest", description=corpus.__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="directory with the source repositories (<owner>+<name>/)")
    ap.add_argument("--only", nargs="*", help="entry ids to run")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--cores", type=int, default=8, help="AIV cores the host tiling functions see (default 8)")
    a = ap.parse_args(argv)
    root = Path(a.root)
    if not root.is_dir():
        print(f"corpus: --root {a.root!r} is not a directory; clone the SOURCES repositories there", file=sys.stderr)
        return 2
    entries = [e for e in CORPUS if not a.only or e.id in a.only]
    if a.only and len(entries) != len(set(a.only)):
        print(f"corpus: unknown ids {sorted(set(a.only) - {e.id for e in CORPUS})}", file=sys.stderr)
        return 2
    missing = sorted({e.source for e in entries if not (root / e.source).is_dir()})
    if missing:
        print(f"corpus: {root} lacks {', '.join(missing)}; clone them (see SOURCES)", file=sys.stderr)
        return 2
    results = []
    for e in entries:
        r = run_entry(root, e, a.cores)
        results.append(r)
        print(f"{r.id:28s} {r.result:10s} {r.seconds:5.1f}s {r.detail[:150]}", flush=True)
    counted = [r for r in results if r.result != "excluded"]
    passed = sum(r.result == "pass" for r in counted)
    print(f"\n{passed} of {len(counted)} kernels pass ({len(results) - len(counted)} excluded)")
    print(markdown(results))
    if a.json:
        Path(a.json).write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
