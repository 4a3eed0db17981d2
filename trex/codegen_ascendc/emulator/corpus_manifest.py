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
from .runner import _atomic_write
from .corpus import HALF_REDUCTION_RTOL, TOL, Case, Entry, ProjectCases, _gen, elementwise, markdown, poison, run_entry

F16, F32, I32 = torch.float16, torch.float32, torch.int32
HOMEWORK, S3, CONTEST = "KiaraStark+ascendc-homework", "linnlh+ascendc-competition-s3", "hansheng1001+AscendCContest"
S2, S4, XSH, JEFF, DEVKIT = ("Youshikawa+ascendC-S2", "A-Y-1+AscendC-S4", "xsh20021105+AscendC-S3",
                             "JeffDing+AscendC_Code", "mirror-cann+asc-devkit")
ACL = "examples/01_simd_cpp_api/02_features/99_acl_based/00_acl_compilation/"
CANN_OPS = "Hayden727+cann-ops"


def fast_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def fast_gelu_grad(dy, x):
    s = torch.sigmoid(1.702 * x)
    return dy * (s + 1.702 * x * s * (1 - s))


def tanh_gelu(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def cann_gelu_golden(x):
    """cann-ops Gelu's own msopst golden (src/math/gelu/tests/st/test_gelu.py), in float32: its constants
    (0.0455399241, not tanh-GELU's 0.044715 * 1.0184...) differ from tanh_gelu by up to ~2e-4 on [0.1, 1]."""
    xf = x.float()
    return (xf / (1 + torch.exp(-1.595769122 * (xf + 0.0455399241 * xf ** 3)))).to(x.dtype)


def xlogy(x, y):
    return torch.xlogy(x, y)


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


def clip_cases(dtypes=(F16, F32), shapes=((8, 2048), (3, 333)), lo=-2.0, hi=2.0, bounds=(-0.5, 0.75)):
    def build():
        cases = []
        for dt in dtypes:
            for si, shape in enumerate(shapes):
                x = _gen(shape, dt, lo, hi, seed=si)
                lo_, hi_ = (torch.tensor([b], dtype=dt) for b in bounds)
                cases.append(Case([x, lo_, hi_], [poison(shape, dt)], [x.clamp(lo_.item(), hi_.item())], {}, *TOL[dt]))
        return cases
    return build


def compare_cases(fn, dtypes=(F16, F32), shapes=((8, 2048), (3, 333)), attrs=None, equal_frac=0.3, lo=-2.0, hi=2.0):
    """Boolean-output comparisons; a fraction of the elements equal so both outcomes occur."""
    def build():
        cases = []
        for dt in dtypes:
            for si, shape in enumerate(shapes):
                a = _gen(shape, dt, lo, hi, seed=si)
                b = _gen(shape, dt, lo, hi, seed=si + 100)
                mask = torch.rand(shape, generator=torch.Generator().manual_seed(si)) < equal_frac
                b = torch.where(mask, a, b)
                ref = fn(a, b, **(attrs or {}))
                cases.append(Case([a, b], [poison(shape, torch.bool)], [ref], {}, 0, 0))
        return cases
    return build



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
    # The sample's own shape (LayerNormCustomSample/KernelLaunch/.../scripts/gen_data.py: x (16384, 1024); its
    # README: "a fixed shape") and a small one: its tiling takes 18 rows a tile over 48 blocks, so the 4096
    # columns this manifest used before (288 KB a row tile per buffer) cannot fit any UB.
    cases = []
    for si, (rows, cols) in enumerate(((16384, 1024), (16, 1024))):
        x = _gen((rows, cols), F32, seed=si)
        g, b = _gen((cols,), F32, seed=si + 1), _gen((cols,), F32, seed=si + 2)
        ref = torch.nn.functional.layer_norm(x, (cols,), g, b, 1e-5)
        cases.append(Case([x, g, b], [poison((rows, cols), F32)], [ref], {"epsilon": 1e-5}, 1e-4, 1e-4))
    return cases


def mse_grad_cases(dtypes=(F16, F32), shapes=((8, 2048), (3, 333)), lo=-2.0, hi=2.0):
    cases = []
    for dt in dtypes:
        for si, shape in enumerate(shapes):
            p, lab, dout = (_gen(shape, dt, lo, hi, seed=si * 3 + k) for k in range(3))
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



# Season 3's own test cases (linnlh/ascendc-competition-s3 basic/<op>/tests/<Op>Case*/scripts/gen_data.py, run
# through AclNN: aclrtMalloc'd buffers); the kiara and xsh entries solve the same tasks and take the same cases.
S3_ASINH_GRAD = [((128,), F16), ((128,), F32), ((1024, 1024), F16)]  # y, dy in [1, 3]
S3_NOT_EQUAL = [((64,), (64,), F16, -10, 10), ((100,), (100,), F32, -10, 10), ((100,), (100,), I32, 0, 5),
                ((100,), (100,), torch.int8, 0, 5), ((32, 16, 1), (32, 16, 8), F16, -10, 10)]
S3_IS_CLOSE = [((128,), (128,), F16, (-1, 1), (-0.01, 0), 0.005, 0.005),
               ((128,), (128,), F32, (-1, 1), (-0.01, 0), 0.005, 0.005),
               ((16, 1), (8, 16, 1, 32), torch.uint8, (200, 255), (200, 255), 0.01, 2.5),
               ((512, 512), (512, 512), I32, (200, 255), (200, 255), 0.01, 2.5)]


def s3_asinh_grad_cases():
    cases = []
    for si, (shape, dt) in enumerate(S3_ASINH_GRAD):
        y, dy = _gen(shape, dt, 1, 3, seed=si), _gen(shape, dt, 1, 3, seed=si + 3)
        ref = (dy.float() / torch.cosh(y.float())).to(dt)
        atol, rtol = TOL[dt]
        cases.append(Case([y, dy], [poison(shape, dt)], [ref], {}, atol * 4, rtol * 4))
    return cases


def s3_not_equal_cases():
    cases = []
    for si, (s1, s2, dt, lo, hi) in enumerate(S3_NOT_EQUAL):
        a, b = _gen(s1, dt, lo, hi, seed=si), _gen(s2, dt, lo, hi, seed=si + 100)
        if s1 == s2:  # a share of equal elements so both outcomes occur
            b = torch.where(torch.rand(s1, generator=torch.Generator().manual_seed(si)) < 0.3, a, b)
        ref = torch.ne(a, b)
        cases.append(Case([a, b], [poison(ref.shape, torch.bool)], [ref], {}, 0, 0))
    return cases


def s3_is_close_cases():
    cases = []
    for si, (s1, s2, dt, r1, r2, rtol, atol) in enumerate(S3_IS_CLOSE):
        a, b = _gen(s1, dt, *r1, seed=si), _gen(s2, dt, *r2, seed=si + 100)
        ref = torch.isclose(a.double(), b.double(), rtol=rtol, atol=atol)
        cases.append(Case([a, b], [poison(ref.shape, torch.bool)], [ref],
                          {"rtol": rtol, "atol": atol, "equal_nan": False}, 0, 0))
    return cases


def histogram_cases():
    cases = []
    for si, n in enumerate((4096, 1000)):
        x = _gen((n,), F32, 0, 10, seed=si)
        ref = torch.histc(x, bins=100, min=0, max=10)
        cases.append(Case([x], [poison((100,), F32)], [ref], {"bins": 100, "min": 0.0, "max": 10.0}, 0, 0))
    return cases


def eye_cases():
    """The case of the project's own test (prof_case/Eye/test_op.py, through torch_npu): a zeroed
    32 x 32 x 32 x 32 half tensor, Eye written into it in place (the OpDef has no output)."""
    shape = (32, 32, 32, 32)
    ref = torch.eye(32, dtype=F16).expand(shape).contiguous()
    return [Case([torch.zeros(shape, dtype=F16)], [], [], {"num_rows": 32, "num_columns": 32, "batch_shape": [32, 32],
                                                           "dtype": 1}, 0, 0, compare=[0], expected_inputs=[ref])]


# ScatterSubTest/scripts/gen_data.py: var [64] half in [1, 10], 4 indices, updates in [-10, 0]
SCATTER_SUB_TEST = dict(dtypes=(F16,), shapes=((64, None, 4),), var_range=(1, 10), upd_range=(-10, 0))


def scatter_cases(kind: str, out_listed: bool, dtypes=(F32, F16), shapes=((64, 32, 20), (17, 40, 9), (256, 16, 100)),
                  var_range=(-2.0, 2.0), upd_range=(-2.0, 2.0)):
    """ScatterSub/ScatterMax (TF semantics): var[index[i], ...] op= update[i, ...], unique indices, in place.
    shapes: (rows, cols or None for a 1-D var, number of indices). out_listed: the OpDef lists var as an
    output too (the kernel gets a second pointer to it)."""
    def build():
        cases = []
        for dt in dtypes:
            for si, (rows, cols, n) in enumerate(shapes):
                row = () if cols is None else (cols,)
                var = _gen((rows, *row), dt, *var_range, seed=si)
                idx = torch.randperm(rows, generator=torch.Generator().manual_seed(si))[:n].to(I32)
                upd = _gen((n, *row), dt, *upd_range, seed=si + 50)
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


# basic/scatter_elements/tests/ScatterElementsCase{1..4}/scripts/gen_data.py (run through AclNN): var shape,
# indices (= updates) shape, dtype, var range, index range (np.random.uniform(...).astype(np.int32): truncated),
# updates range, axis, reduction. Their golden is torch.scatter / scatter_add on the same arrays.
S3_SCATTER_ELEMENTS = [((64,), (32,), F16, (-1, 1), (0, 4), (-10, 10), 0, "add"),
                       ((4, 8, 12), (2, 4, 6), I32, (-5, 5), (0, 4), (-10, 10), 0, "add"),
                       ((32, 64, 64), (32, 32, 32), F16, (-1, 1), (0, 30), (-10, 10), 2, "none"),
                       ((32, 64, 64), (32, 32, 32), F32, (-1, 1), (0, 30), (-10, 10), 2, "none")]


def scatter_elements_cases(dtypes=(F32, F16)):
    """ScatterElements (ONNX; torch.scatter / scatter_add), var updated in place. First season 3's own four cases
    (S3_SCATTER_ELEMENTS: indices with repeats; for "none" the last write of an index wins, as in their torch
    golden and in every kernel's in-order loop; "add" referenced in float and rounded once), then the manifest's
    earlier shapes (distinct indices per row, a non-last axis over equal off-axis dims)."""
    def build():
        cases = []
        for si, (vs, ishape, dt, vr, ir, ur, axis, red) in enumerate(S3_SCATTER_ELEMENTS):
            var, upd = _gen(vs, dt, *vr, seed=si), _gen(ishape, dt, *ur, seed=si + 20)
            g = torch.Generator().manual_seed(si + 40)
            idx = (torch.rand(ishape, generator=g, dtype=torch.float64) * (ir[1] - ir[0]) + ir[0]).to(I32)
            base = var.double() if dt.is_floating_point else var.long()
            src = upd.double() if dt.is_floating_point else upd.long()
            ref = (base.scatter_add(axis, idx.long(), src) if red == "add" else base.scatter(axis, idx.long(), src)).to(dt)
            atol, rtol = TOL.get(dt, (0, 0))
            if dt == F16 and red == "add":  # up to 32 adds per slot, |sum| < 64: a kernel adding in half rounds each
                atol = 2.0 ** -4            # one (their torch golden does too): 4 half ulps at [16, 32)
            cases.append(Case([var, idx, upd], [], [], {"axis": axis, "reduce": red}, atol, rtol,
                              compare=[0], expected_inputs=[ref]))
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
            running = torch.cumsum(x.float(), axis)
            ref = running.to(dt)
            atol, rtol = TOL[dt]
            if dt == F16:
                # A running sum kept in half (as the device adds, one rounding a step) is off by up to about
                # steps x eps x the largest partial sum so far, not relative to the final value (row 0 of
                # (8, 128) reaches |11| and ends at -0.37): the tolerance scales with cummax |partial sum|.
                atol = HALF_REDUCTION_RTOL * torch.cummax(running.abs(), axis).values + atol * 8
                cases.append(Case([x, torch.tensor([axis], dtype=I32)], [poison(shape, dt)], [ref],
                                  {"exclusive": False, "reverse": False}, atol, HALF_REDUCTION_RTOL))
            else:
                cases.append(Case([x, torch.tensor([axis], dtype=I32)], [poison(shape, dt)], [ref],
                                  {"exclusive": False, "reverse": False}, atol * 8, rtol * 8))
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


def as_strided_cases():
    """AsStrided (torch.as_strided(x, size, stride, storage_offset); size, stride and storage_offset are int32
    input tensors, y has shape size). The project has no test: shapes chosen over its three dtypes."""
    cases = []
    for si, (dt, shape, size, stride, offset) in enumerate((
            (F32, (4, 5, 6), [3, 4], [5, 1], 2), (F16, (8, 64), [4, 16, 2], [64, 2, 1], 3),
            (I32, (100,), [10, 10], [1, 10], 0), (F32, (16, 1024), [16, 512], [1024, 2], 1))):
        x = _gen(shape, dt, -5, 5, seed=si)
        ref = torch.as_strided(x, size, stride, offset).contiguous()
        cases.append(Case([x, torch.tensor(size, dtype=I32), torch.tensor(stride, dtype=I32),
                           torch.tensor([offset], dtype=I32)], [poison(size, dt)], [ref], {}, 0, 0))
    return cases


def three_nn_cases():
    """ThreeNN (PointNet++'s three_nn, tf_interpolate: per point of xyz1 [b, n, 3] the three nearest points of
    xyz2 [b, m, 3], squared distances ascending and their indices; the kernel squares without a Sqrt too).
    The project has no test: shapes chosen here."""
    cases = []
    for si, (b, n, m) in enumerate(((2, 64, 32), (1, 100, 10), (4, 16, 200))):
        xyz1, xyz2 = _gen((b, n, 3), F32, -1, 1, seed=si), _gen((b, m, 3), F32, -1, 1, seed=si + 10)
        d2 = ((xyz1.double()[:, :, None] - xyz2.double()[:, None]) ** 2).sum(-1)
        dist, idx = d2.topk(3, -1, largest=False)
        cases.append(Case([xyz1, xyz2], [poison((b, n, 3), F32), poison((b, n, 3), I32)],
                          [dist.float(), idx.to(I32)], {}, 1e-6, 1e-5))
    return cases


def non_finite_check_cases():
    """NonFiniteCheck (found_flag = 1.0 if any element of any tensor of the list is inf or NaN, else 0.0; the kernel
    zeroes the flag first). Its gen_data.py case [1, inf, -inf, nan, 0] float, then lists over its three dtypes
    with and without a non-finite element deep inside a later tensor."""
    inf, nan = float("inf"), float("nan")
    cases = [Case([[torch.tensor([1.0, inf, -inf, nan, 0.0])]], [poison((1,), F32)], [torch.tensor([1.0])], {}, 0, 0)]
    for si, dt in enumerate((F32, F16, torch.bfloat16)):
        for bad in (None, inf, nan):
            ts = [_gen((33, 70), dt, -100, 100, seed=si), _gen((50, 100), dt, -100, 100, seed=si + 1),
                  _gen((8, 2048), dt, -100, 100, seed=si + 2)]
            if bad is not None:
                ts[2].view(-1)[12345] = bad
            cases.append(Case([ts], [poison((1,), F32)], [torch.tensor([0.0 if bad is None else 1.0])], {}, 0, 0))
    return cases


def mse_loss_cases():
    """MseLoss (torch.nn.MSELoss; attr reduction "mean", the OpDef default, or "sum"). Its test
    (KernelLaunch/MseLossKernelInvocation/scripts/gen_data.py): [8, 2048] float in [0, 1], nn.MSELoss(reduction="sum"),
    a one-float golden. "sum"/"mean" write the scalar to out[0] (a 1-element out here: MSELoss's scalar); the
    framework kernel reduces within its block only (each block stores its partial at its own slice's out[0], and
    the host-side sum of its KernelLaunch main.cpp is absent), so these cases stay at sizes its tiling gives one
    block (totalLengthAligned <= 332 x 64 floats at 310B's 256 KB UB) and a multiple of its 256-B align (mean
    divides by the aligned length). No "none" case: its CopyOut stores this->blockLength elements from one tile
    (mse_loss.cpp:335-336: 64 KB out of a 32-KB buffer at [8, 2048]; key 2 never sets blockLength)."""
    cases = []
    for si, (shape, dt, reduction) in enumerate((((8, 2048), F32, "sum"), ((8, 2048), F32, "mean"),
                                                 ((4096,), F16, "mean"), ((64, 128), F16, "sum"))):
        x, y = _gen(shape, dt, 0, 1, seed=2 * si), _gen(shape, dt, 0, 1, seed=2 * si + 1)
        ref = torch.nn.functional.mse_loss(x.float(), y.float(), reduction=reduction).reshape(1)
        atol, rtol = TOL[dt]
        cases.append(Case([x, y], [poison((1,), dt)], [ref.to(dt)], {"reduction": reduction}, atol * 4,
                          HALF_REDUCTION_RTOL if dt == F16 else rtol * 4))
    return cases


def nms_reference(boxes, scores, max_per_class, iou_threshold, score_threshold):
    """ONNX NonMaxSuppression (onnx.ai/onnx/operators/onnx__NonMaxSuppression.html), center_point_box 0: boxes
    [num_batches, num_boxes, 4] as [y1, x1, y2, x2] (any diagonal pair of corners), scores [num_batches,
    num_classes, num_boxes]; per batch and class, greedily in descending score, a box whose score exceeds
    score_threshold is selected unless its IOU with an already selected box is strictly greater than
    iou_threshold, at most max_per_class boxes; selected_indices [num_selected, 3] rows (batch, class, box)."""
    b64 = boxes.double()
    lo, hi = torch.minimum(b64[..., :2], b64[..., 2:]), torch.maximum(b64[..., :2], b64[..., 2:])
    area = (hi - lo).prod(-1)
    rows = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            picked = []
            for i in torch.argsort(scores[b, c].double(), descending=True, stable=True).tolist():
                if len(picked) == max_per_class or scores[b, c, i] <= score_threshold:
                    break
                inter = (torch.minimum(hi[b, i], hi[b, picked]) - torch.maximum(lo[b, i], lo[b, picked])).clamp(min=0).prod(-1)
                union = area[b, i] + area[b, picked] - inter
                iou = torch.where((area[b, i] > 0) & (area[b, picked] > 0) & (union > 0), inter / union, 0.0)
                if not bool((iou > iou_threshold).any()):
                    picked.append(i)
            rows += [[b, c, i] for i in picked]
    return torch.tensor(rows, dtype=I32).reshape(-1, 3)


def non_max_suppression_cases():
    """The project has no test, README or doc (basic/non_max_suppression holds only op_host/ and op_kernel/); its
    OpDef is ONNX NonMaxSuppression's (inputs boxes, scores, max_output_boxes_per_class, iou_threshold,
    score_threshold; output selected_indices; attr center_point_box, spelt cneter_point_box and unused by the
    kernel: corners), int32 where ONNX has int64: nms_reference is ONNX's documented contract. The output is
    [num_selected, 3], as ONNX returns it (the kernel stores row k at int32 offset 3k, 32 B a row: its last
    store runs 20 B into the allocation's padding). Scores in [0, 1]: the kernel marks taken boxes -1."""
    cases = []
    for si, (nb, nc, n, max_out, iou, score) in enumerate(((1, 1, 50, 50, 0.5, 0.2), (2, 3, 100, 8, 0.3, 0.5),
                                                            (1, 2, 37, 20, 0.6, 0.0))):
        g = torch.Generator().manual_seed(si)
        centre = torch.rand(nb, n, 2, generator=g)
        half = torch.rand(nb, n, 2, generator=g) * 0.15 + 0.02
        flip = torch.rand(nb, n, 1, generator=g) < 0.5  # either diagonal pair of corners
        a, z = centre - half, centre + half
        boxes = torch.where(flip, torch.cat([z, a], -1), torch.cat([a, z], -1))
        scores = torch.rand(nb, nc, n, generator=g)
        ref = nms_reference(boxes, scores, max_out, iou, score)
        cases.append(Case([boxes, scores, torch.tensor([max_out], dtype=I32), torch.tensor([iou]), torch.tensor([score])],
                          [poison(ref.shape, I32)], [ref], {}, 0, 0))
    return cases


def radius_reference(x, y, ptr_x, ptr_y, r, max_num_neighbors, ignore_same_index):
    """examples/AclNNInvocationNaive/gen_data.py radius_numpy (also its tests/st golden): per batch b (ptr_x/ptr_y
    bound x and y rows), per y row i, the x rows j of the batch with ||x_j - y_i|| <= r (in float32), j != i
    if ignore_same_index, the first max_num_neighbors of them; out [2, K] rows (j, i), in x's dtype."""
    x, y = x.float(), y.float()
    pairs = []
    for b in range(len(ptr_x) - 1):
        xs, xe, ys, ye = int(ptr_x[b]), int(ptr_x[b + 1]), int(ptr_y[b]), int(ptr_y[b + 1])
        if xs == xe or ys == ye:
            continue
        for i in range(ys, ye):
            near = (torch.linalg.vector_norm(x[xs:xe] - y[i], dim=1) <= r).nonzero().flatten() + xs
            if ignore_same_index:
                near = near[near != i]
            pairs += [(j, i) for j in near[:max_num_neighbors].tolist()]
    return torch.tensor(pairs, dtype=torch.float64).reshape(-1, 2).T


def radius_cases():
    """Radius at its example's form (x [N, 2], y [M, 2] uniform, gen_data.py's reference), over its three dtypes,
    with ptr_x/ptr_y given (the emulator's host has no absent optional input; [0, N], [0, M] is gen_data's
    default) and batched. Every y row here has at least max_num_neighbors neighbours, so K = max_num_neighbors
    * M: the kernel stores row 1 at out[max_num_neighbors * M + k] and moves it to out[K + k] at the end
    (radius.cpp:87-90), so an out of [2, K] with K < max_num_neighbors * M, as its example allocates it
    (gen_data.py: [100, 2], [50, 2], r 1, 10 neighbours, K ~ 160 of 500), is written past its end (a kernel
    finding, /work/helpers/h23n_findings.md)."""
    cases = []
    for si, (dt, n, m, ptr_x, ptr_y, lo, hi, r, k, ignore) in enumerate((
            (F32, 100, 50, [0, 100], [0, 50], 0.1, 1.0, 0.7, 10, False),
            (F16, 100, 50, [0, 60, 100], [0, 20, 50], -1.0, 1.0, 1.3, 6, True),
            (I32, 80, 30, [0, 80], [0, 30], -5, 5, 6.5, 8, False),
            (F32, 64, 64, [0, 32, 64], [0, 32, 64], 0.0, 1.0, 0.9, 5, True))):
        x, y = _gen((n, 2), dt, lo, hi, seed=si), _gen((m, 2), dt, lo, hi, seed=si + 10)
        px, py = torch.tensor(ptr_x, dtype=I32), torch.tensor(ptr_y, dtype=I32)
        ref = radius_reference(x, y, px, py, r, k, ignore)
        assert ref.shape[1] == k * m, f"radius case {si}: a y row has fewer than {k} neighbours; widen r"
        cases.append(Case([x, y, px, py], [poison(ref.shape, dt)], [ref.to(dt)],
                          {"r": r, "max_num_neighbors": k, "ignore_same_index": ignore}, 0, 0))
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


def spec(inputs, outputs, attrs=None, types=("float",)) -> dict:
    """A case in msopst's JSON form: inputs (name, shape[, value range]) and outputs (name, shape[, types]),
    every tensor taking `types` (one variant per type) unless it names its own."""
    def desc(name, shape, rng=(-2.0, 2.0), tys=None, value=None):
        d = {"name": name, "shape": list(shape), "type": list(tys or types), "value_range": [list(rng)]}
        return d if value is None else {**d, "value": value}
    return {"input_desc": [desc(*i) for i in inputs], "output_desc": [desc(*o) for o in outputs],
            "attr": [{"name": k, "value": v} for k, v in (attrs or {}).items()]}


def ew_spec(shape, n_in=1, types=("float", "float16"), rng=(-2.0, 2.0), names=None, out="y", out_types=None):
    """An elementwise case at one shape: n_in same-shape inputs, one same-shape output."""
    names = names or (["x"] if n_in == 1 else [f"x{k + 1}" for k in range(n_in)])
    return spec([(n, shape, rng) for n in names], [(out, shape, rng, out_types)], types=types)


def gelu_grad(dy, x, y=None):
    xr = x.clone().requires_grad_(True)
    tanh_gelu(xr).backward(dy)
    return xr.grad


def _moe_init_routing_v2_cases():
    """MoeInitRoutingV2 (its README and examples: aclnnMoeInitRoutingV2 plus the EP split of expanded_x /
    expanded_row_idx; dropPadMode 0 only). The contract: the n * k entries of expert_idx sorted by expert, stably
    (equal experts keep their flat order); expanded_x[j] = x[src_j // k] for the j-th sorted entry src_j,
    expanded_row_idx[src_j] = j, expert_tokens_count_or_cumsum = the per-expert cumsum (flag 1) of the counts.
    Device 0 with end_expertId = expert_num - 1 keeps every row (start_row 0, end_row n * k).
    Cases: the examples' own (AclNNInvocationNaive/main.cpp: x [3, 4] float, expert_idx [[1, 2, 0], [1, 0, 2],
    [1, 0, 2]], expert_num 3, flag 1; ATBInvocation's gen_data.py has the same case with its golden, checked
    below), and two more of the OpDef's dtypes at shapes whose n * k is not a multiple of 32 (the Sort tail
    padded with MIN_FP32) and spans several Sort32 repeats (the full sort's 4-way merges): all stay in the
    kernel's full-load path (tiling key 20000, n * k <= 6144). expert_tokens_before_capacity is not produced
    (the example passes nullptr).
    Its other paths are no case of the project and are not in the manifest; run ad hoc they stop on the kernel's
    own code: key 10001 (cols > 16376) wraps every AscendC::SyncAll in `#ifndef __CCE_KT_TEST__` (moe_v2_sort_base.h,
    moe_v2_src_to_dst_op.h), which the emulator defines as CPU-debug does, so block 7's InitGlobalMemory of
    expert_tokens_count and block 3's later read of it are unordered (the race check reports it; on the NPU the
    SyncAll orders them); key 10002 (n * k > 6144) calls InitGlobalMemory after its TPipe's InitBuffer
    (MoeV2SortMultiCore::Process), which the Fill/InitGlobalMemory page forbids and the emulator refuses (the
    v220 implementation takes PopStackBuffer's leftover UB, 768 B there)."""
    cases = []
    specs = [(torch.tensor([[0.1] * 4, [0.2] * 4, [0.3] * 4]), torch.tensor([[1, 2, 0], [1, 0, 2], [1, 0, 2]], dtype=I32), 3),
             (_gen((50, 33), F16, seed=1), _gen((50, 3), I32, 0, 6, seed=2), 7),
             (_gen((100, 40), torch.bfloat16, seed=3), _gen((100, 8), I32, 0, 15, seed=4), 16)]
    for x, idx, experts in specs:
        n, k = idx.shape
        order = torch.sort(idx.flatten().long(), stable=True).indices
        row_idx = torch.empty(n * k, dtype=I32)
        row_idx[order] = torch.arange(n * k, dtype=I32)
        cumsum = torch.bincount(idx.flatten().long(), minlength=experts).cumsum(0).to(I32)
        expanded = x[order // k]
        attrs = {"active_num": 0, "expert_capacity": 0, "expert_num": experts, "drop_pad_mode": 0,
                 "expert_tokens_count_or_cumsum_flag": 1, "expert_tokens_before_capacity_flag": False,
                 "start_expertId": 0, "end_expertId": experts - 1, "device_id": 0}
        cases.append(Case([x, idx], [poison(expanded.shape, x.dtype), poison((n * k,), I32), poison((experts,), I32), None],
                          [expanded, row_idx, cumsum, None], attrs, 0, 0))
    # ATBInvocation/MoeInitRoutingV2OperationTest/script/gen_data.py's golden for the first case
    assert cases[0].expected[1].tolist() == [3, 6, 0, 4, 1, 7, 5, 2, 8] and cases[0].expected[2].tolist() == [3, 6, 9]
    return cases


def cann_ops(op, reference=None, specs=(), cores=None, **kw) -> Entry:
    """cann-ops' src/math/<op>: kernel op_kernel/<op>.cpp, cases from its tests/st JSON plus `specs`."""
    cases = ProjectCases(reference, list(specs), **kw) if reference else None
    return Entry(f"cann-ops/{op}", CANN_OPS, f"src/math/{op}/op_kernel/{op}.cpp", cases, cores=cores)


def _tf_clip_by_value(x, clip_value_min, clip_value_max, **_):
    return torch.maximum(torch.minimum(x, clip_value_max), clip_value_min)


def _topk_softmax(x, k, **_):
    v, i = torch.softmax(x, -1).topk(k, -1)
    return v, i.int()


def _mul_mul_reduce_mean_d_twice(mul0_input0, mul0_input1, mul1_input0, add_y, gamma, beta, **_):
    x = mul0_input0.float() * mul0_input1.float() * mul1_input0.float()
    m = x.mean(-1, keepdim=True)
    r = gamma.float() / torch.sqrt(((x - m) ** 2).mean(-1, keepdim=True) + add_y.float())
    return beta.float() - r * m + r * x


def _eye(y, num_rows, num_columns, batch_shape, **_):
    return torch.eye(num_rows, num_columns or num_rows).expand(*batch_shape, num_rows, num_columns or num_rows)


def _scatter_sub(var, indices, updates, **_):
    return var.index_add(0, indices, -updates)


def _gather(x1, indices, batch_dims=0, **_):
    """TF Gather along axis batch_dims with batch_dims leading batch axes."""
    if batch_dims == 0:
        return x1[indices]
    return torch.stack([_gather(x, i, batch_dims - 1) for x, i in zip(x1, indices)])


def _kl_div_target_backward(grad_output, self, target, reduction, log_target):
    if log_target:
        grad = grad_output * (target + 1 - self) * torch.exp(target)
    else:
        grad = (grad_output * (torch.log(target) + 1 - self)).masked_fill(target == 0, 0)
    return grad / target.numel() if reduction == 1 else grad


def _bev_pool(depth, feat, ranks_depth, ranks_feat, ranks_bev, interval_starts, interval_lengths, bev_feat_shape):
    """BevPool as tests/st/test_bev_pool_half.py computes it: for every point j of every interval,
    bev[unravel(ranks_bev[j])] += depth.flat[ranks_depth[j]] * feat.flat[ranks_feat[j]] (a half accumulator,
    each product and sum rounded to half as numpy's float16 does), then bev [B, Dz, Dy, Dx, C] -> [B, C, Dz, Dy, Dx]."""
    bev = torch.zeros(bev_feat_shape, dtype=torch.float16).flatten()
    d, f = depth.half().flatten(), feat.half().flatten()
    for start, length in zip(interval_starts.tolist(), interval_lengths.tolist()):
        for j in range(start, start + length):
            bev[ranks_bev[j]] = bev[ranks_bev[j]] + d[ranks_depth[j]] * f[ranks_feat[j]]
    return bev.reshape(bev_feat_shape).permute(0, 4, 1, 2, 3).float()


def dawsn(x):
    import numpy as np
    from scipy.special import dawsn as dw  # the reference only: no torch op
    return torch.from_numpy(np.asarray(dw(x.double().numpy()))).float()


# Membership (fixed before the first run): every op directory of src/math/ of cann-ops at the SOURCES commit
# whose kernel op_kernel/<op>.cpp does not use the cube unit (Matmul/Mmad/LoadData, AIC or MIX kernels:
# flash_attention_score_with_large_head_dim, inplace_fused_matmul_softmax_grad, matmul_all_reduce,
# matmul_api_constant, matmul_leakyrelu, matmul_reduce_scatter, rfft1_d, stft are out: the emulator is
# vector-only). 83 ops; those without a reference here are compile-checked only ("no cases").
MEAN = {"reduction": "mean"}
CANN_OPS_ENTRIES = [
    cann_ops("abs", lambda x: x.abs(), [ew_spec((1024, 1024), types=("float", "float16", "int32"))]),
    cann_ops("add_custom", torch.add, [ew_spec((8, 2048), 2, ("float16",), names=["x", "y"], out="z")]),
    # examples/AclNNInvocationNaive/gen_data.py: sum over axis 1 of sigmoid((a1 + a2) * a3) * a4 * a5, half, values in
    # [-0.2, 0.2], a3 = -0.1, at [b, 64, 32]. Not its b = 40: 5 batches a block make its Add's repeatTimes
    # 5 * 64 = 320, which the uint8_t parameter wraps to 64 on the NPU (the emulator raises), so b <= 3 * 8 here
    cann_ops("add_sigmoid_mul_reduce_sum_d",
             lambda a1, a2, a3, a4, a5: (torch.sigmoid((a1.float() + a2.float()) * a3.float()) * a4.float()
                                         * a5.float()).sum(1),
             [spec([("add_0_input0", (b, 64, 32), (-0.2, 0.2)), ("add_0_input1", (1, 1, 32), (-0.2, 0.2)),
                    ("mul_0_input1", (1,), (-0.1, -0.1)), ("mult_1_input1", (b, 64, 1), (-0.2, 0.2)),
                    ("mult_2_input1", (b, 64, 32), (-0.2, 0.2))], [("out", (b, 32))], types=("float16",))
              for b in (24, 7)], st_files=False, reduction=True),
    cann_ops("addcdiv", lambda input_data, x1, x2, value: input_data + value * x1 / x2,
             [spec([("input_data", (100, 100), (0.1, 1)), ("x1", (100, 100), (0.1, 1)), ("x2", (100, 100), (0.1, 1)),
                    ("value", (1,), (0.1, 1))], [("y", (100, 100))], types=("float16", "float"))], tol_scale=2),
    cann_ops("addcmul", lambda input_data, x1, x2, value: input_data + value * x1 * x2,
             [spec([("input_data", (100, 100), (0.1, 1)), ("x1", (100, 100), (0.1, 1)), ("x2", (100, 100), (0.1, 1)),
                    ("value", (1,), (0.1, 1))], [("y", (100, 100))], types=("float16", "float"))], tol_scale=2),
    cann_ops("angle_v2", lambda x: torch.angle(x.float()),
             [ew_spec((8, 24), types=("float", "float16"), rng=(-1, 1))]),
    cann_ops("arange", lambda start, end, step, out_shape: torch.arange(start.item(), end.item(), step.item())),
    # its st file's expect function (tests/st/test_bev_pool_half.py), case and half accumulation
    cann_ops("bev_pool", _bev_pool),
    cann_ops("cast", lambda x, dst_type: x, [spec([("x", (10, 10), (-5, 5))], [("y", (10, 10), (-5, 5), ("float",))],
                                                  {"dst_type": 0}, types=("float16",))]),
    # BLAS ccopy (docs/aclnnCcopy.md: out = x, COMPLEX64; n complex elements). gen_data.py: 2048; its tiling always
    # launches every core (n below 8 floats, n over 8 x 8 floats: its three branches)
    cann_ops("ccopy", lambda x, n, incx, incy: x,
             [spec([("x", (k,), (-1, 1))], [("y", (k,))], {"n": k, "incx": 1, "incy": 1}, types=("complex64",)) for k in (2048, 3, 29, 1000)]),
    # Both ops' tests take tf.clip_by_value as the golden: maximum(minimum(x, max), min), which gives `min` where
    # the drawn bounds cross (min > max; their JSON draws both from [0.1, 1]).
    cann_ops("clip_by_value", _tf_clip_by_value),
    cann_ops("clip_by_value_v2", _tf_clip_by_value),
    # elementwise complex product (docs/aclnnComplexMatDot.md; gen_data.py: golden x * y on [156, 1024] COMPLEX64)
    cann_ops("complex_mat_dot", lambda matx, maty, m, n: matx * maty,
             [spec([("matx", (m, n), (-1, 1)), ("maty", (m, n), (-1, 1))], [("result", (m, n))], {"m": m, "n": n},
                   types=("complex64",)) for m, n in ((156, 1024), (3, 5), (16, 100))], tol_scale=2),
    cann_ops("cos", torch.cos, [ew_spec((1024, 1024), rng=(-5, 5))], tol_scale=4),
    cann_ops("cross", lambda x1, x2, dim: torch.linalg.cross(x1, x2, dim=dim)),
    cann_ops("dawsn", dawsn, tol_scale=4),
    # DiagV2 (aclnnDiag on a 2-D self: torch.diag(self, diagonal), the diagonal as a 1-D tensor); gen_data.py:
    # float [10, 10] in [-100, 100], diagonal 1
    cann_ops("diag_v2", lambda x, diagonal: torch.diag(x, diagonal),
             [spec([("x", (10, 10), (-100, 100))], [("y", (9,))], {"diagonal": 1}),
              spec([("x", (33, 17), (-100, 100))], [("y", (17,))], {"diagonal": -3}, types=("float16", "int8", "int32")),
              spec([("x", (64, 64), (-100, 100))], [("y", (64,))], {"diagonal": 0}, types=("int64", "int16"))]),
    cann_ops("equal", torch.eq, [ew_spec((100, 100), 2, ("int32", "float16", "float"), out_types=("bool",) * 3)]),
    # ExpandV2 = numpy broadcast_to (docs/ExpandV2.md). examples/AclNNInvocationNaive: gen_data.py's int64 [0, 1, 2, 3]
    # as an aclTensor of shape [1, 4] (main.cpp:161) broadcast to [4, 4]; docs/ExpandV2.md's example [3] -> [2, 2];
    # [1, 37] -> [40, 37]. (x [4] -> [4, 4] is no case of the project: its host multiplies shape[0..dimDelta] inclusive,
    # 16 repeats, and writes 384 B past y.)
    cann_ops("expand_v2", lambda x, shape: x.expand(shape),
             [spec([("x", (1, 4), (0, 0), ("int64",), [0, 1, 2, 3])], [("y", (4, 4))], {"shape": [4, 4]}, types=("int64",)),
              spec([("x", (1,), (0, 0), ("int64",), [3])], [("y", (2, 2))], {"shape": [2, 2]}, types=("int64",)),
              spec([("x", (1, 37), (-9, 9))], [("y", (40, 37))], {"shape": [40, 37]}, types=("int64",))]),
    # Eye writes only the ones, into a y that aclnnEye zero-fills first (its st file draws y from [0.1, 1])
    cann_ops("eye", _eye, [spec([("y", (3, 4, 18, 10), (0, 0))], [("y", (3, 4, 18, 10))],
                                {"num_rows": 18, "num_columns": 10, "batch_shape": [3, 4], "dtype": 0},
                                types=("float16", "float", "int32"))], st_files=False),
    # EyeFp64: Eye's OpDef with double added; shapes for its three tiling keys (1: small rows, 2: a row over 64 B,
    # the SliceInfo path; 3: double, columns % 4 == 0, more rows than columns, enough matrices for one block)
    cann_ops("eye_fp64", _eye, [
        spec([("y", (2, 5, 6), (0, 0))], [("y", (2, 5, 6))], {"num_rows": 5, "num_columns": 6, "batch_shape": [2],
                                                            "dtype": 0}, types=("float16", "float", "int32", "float64")),
        spec([("y", (3, 20, 17), (0, 0))], [("y", (3, 20, 17))], {"num_rows": 20, "num_columns": 17, "batch_shape": [3],
                                                                "dtype": 0}, types=("float16", "float", "int32", "float64")),
        # key 3 gives one block 8 * 8 * 8 * 320 B = 160 KB (its host rule would hand 400 matrices, 200 KB, to one block)
        spec([("y", (320, 12, 8), (0, 0))], [("y", (320, 12, 8))], {"num_rows": 12, "num_columns": 8,
                                                                  "batch_shape": [320], "dtype": 0}, types=("float64",)),
    ], st_files=False),
    cann_ops("fast_gelu", fast_gelu, tol_scale=4),
    cann_ops("fast_gelu_grad", lambda dy, x: fast_gelu_grad(dy, x), tol_scale=4),
    # Fill's output shape is the content of dims (its st file draws dims from [0.1, 1]: shape [1])
    cann_ops("fill", lambda dims, value, out_shape: value.expand(out_shape),
             [spec([("dims", (4,), (0, 0), ("int64",), [1, 2, 3, 4]), ("value", (1,), (0.1, 1))],
                   [("y", (1, 2, 3, 4))], types=("float16",))], st_files=False),
    # TF Gather (its gen_data.py's golden is tf.gather(x, indices, batch_dims=1)): key 0 copies slices over 32 bytes,
    # key 1 smaller ones element by element
    cann_ops("gather", _gather, [
        spec([("x1", (96, 43, 1023), (-5, 5)), ("indices", (96, 43), (1, 42), ("int32",))], [("y", (96, 43, 1023))],
             {"batch_dims": 1}, types=("int32",)),
        spec([("x1", (6, 20, 4), (-5, 5)), ("indices", (6, 9), (0, 19), ("int32", "int32"))], [("y", (6, 9, 4))],
             {"batch_dims": 1}, types=("float", "float16")),
        spec([("x1", (30, 100), (-5, 5)), ("indices", (12,), (0, 29), ("int32", "int32"))], [("y", (12, 100))],
             {"batch_dims": 0}, types=("float", "float16"))]),
    cann_ops("gcd", torch.gcd, [ew_spec((1024, 1024), 2, ("int32", "int16"), rng=(-1000, 1000))]),
    cann_ops("gelu", cann_gelu_golden, tol_scale=4),
    cann_ops("gelu_grad", gelu_grad, [ew_spec((1024, 1024), 3, names=["dy", "x", "y"], out="z")], tol_scale=4),
    cann_ops("greater_equal", torch.ge),
    cann_ops("heaviside", torch.heaviside, [spec([("input", (8, 2048), (-2, 2)), ("values", (8, 2048), (-1, 1))],
                                                 [("out", (8, 2048))], types=("float", "float16"))]),
    # HistogramV2 (the kernel under aclnnHistc: int32 counts of x in [min, max] over `bins` equal bins, x == max in
    # the last; aclnnHistc passes min/max as tensors of x's dtype and casts the counts); gen_data.py: [10, 10] float
    # in [-100, 100], 10 bins (aclnnHistc takes min == max there as "the data's range": min/max given here)
    cann_ops("histogram_v2", lambda x, min, max, bins: torch.histc(x.float(), bins, min.item(), max.item()),
             [spec([("x", (10, 10), (-100, 100)), ("min", (1,), (0, 0), None, [-100.0]), ("max", (1,), (0, 0), None, [100.0])],
                   [("y", (10,), (0, 0), ("int32",))], {"bins": 10}),
              spec([("x", (64, 100), (-3, 3)), ("min", (1,), (0, 0), None, [-2.0]), ("max", (1,), (0, 0), None, [2.5])],
                   [("y", (100,), (0, 0), ("int32", "int32"))], {"bins": 100}, types=("float", "float16"))]),
    # The i?amax/i?amin tilings (op_host GetNeedVecCoreNum) split n into up to 40 blocks of >= 64 elements whatever
    # GetCoreNumAiv says, while SetBlockDim launches GetCoreNumAiv blocks: written for 910B's 48 AIV cores (at 8,
    # blocks 8..needVecCoreNum-1 never run and their slices are never searched)
    # BLAS icamax (docs/aclnnIcamax.md, gen_data.py golden: the 1-based index of the first argmax |re| + |im|); gen_data.py: 2046
    cann_ops("icamax", lambda x, n, incx: ((x.real.abs() + x.imag.abs()).argmax() + 1).reshape(1),
             [spec([("x", (k,), (-1, 1))], [("result", (1,), (0, 0), ("int32",))], {"n": k, "incx": 1}, types=("complex64",))
              for k in (2046, 100, 9000)], cores=48),
    # BLAS icamin (docs/aclnnIcamin.md, gen_data.py golden: the 1-based index of the first argmin |re| + |im|); gen_data.py: 2046
    cann_ops("icamin", lambda x, n, incx: ((x.real.abs() + x.imag.abs()).argmin() + 1).reshape(1),
             [spec([("x", (k,), (-1, 1))], [("result", (1,), (0, 0), ("int32",))], {"n": k, "incx": 1}, types=("complex64",))
              for k in (2046, 100, 9000)], cores=48),
    # softmax over the last axis written back into x (the OpDef has no output); gen_data.py: [8, 50000] float, golden
    # nn.Softmax(dim=-1); its tiling keys are per dtype (fp16, bf16, fp32)
    cann_ops("inplace_attn_softmax", lambda x: torch.softmax(x, -1),
             [spec([("x", (8, 50000), (-3, 3))], [("x", (8, 50000))]),
              spec([("x", (64, 1024), (-3, 3))], [("x", (64, 1024))], types=("float16", "bfloat16", "float"))], tol_scale=4),
    cann_ops("is_finite", torch.isfinite, [ew_spec((8, 2048), out_types=("bool", "bool"))]),
    cann_ops("is_inf", torch.isinf, [ew_spec((8, 2048), out_types=("bool", "bool"))]),
    # The i?amax/i?amin tilings (op_host GetNeedVecCoreNum) split n into up to 40 blocks of >= 64 elements whatever
    # GetCoreNumAiv says, while SetBlockDim launches GetCoreNumAiv blocks: written for 910B's 48 AIV cores (at 8,
    # blocks 8..needVecCoreNum-1 never run and their slices are never searched)
    # BLAS isamax (docs/aclnnIsamax.md, gen_data.py golden: the 1-based index of the first argmax |x|); gen_data.py: 2046
    cann_ops("isamax", lambda x, n, incx: (x.abs().argmax() + 1).reshape(1),
             [spec([("x", (k,), (-1, 1))], [("result", (1,), (0, 0), ("int32",))], {"n": k, "incx": 1}, types=("float",))
              for k in (2046, 100, 9000)], cores=48),
    # BLAS isamin (docs/aclnnIsamin.md, gen_data.py golden: the 1-based index of the first argmin |x|); gen_data.py: 2046
    cann_ops("isamin", lambda x, n, incx: (x.abs().argmin() + 1).reshape(1),
             [spec([("x", (k,), (-1, 1))], [("result", (1,), (0, 0), ("int32",))], {"n": k, "incx": 1}, types=("float",))
              for k in (2046, 100, 9000)], cores=48),
    # KlDivTargetBackward (aclnnKlDivTargetBackward, its gen_data.py): log_target: grad_output * (target + 1 - self) *
    # exp(target); else grad_output * (log(target) + 1 - self), 0 where target == 0; reduction 1 (mean) divides by the
    # element count. aclnn broadcasts the three inputs to one shape before the kernel: same-shape inputs here
    # (gen_data.py: [4, 400] half, self [1, 400] broadcast, reduction 0, log_target true)
    cann_ops("kl_div_target_backward", _kl_div_target_backward, [
        spec([("grad_output", (4, 400), (-1, 1)), ("self", (4, 400), (-1, 1)), ("target", (4, 400), (-1, 1))],
             [("grad_target", (4, 400))], {"reduction": 0, "log_target": True}, types=("float16", "float")),
        spec([("grad_output", (16, 1000), (-1, 1)), ("self", (16, 1000), (-1, 1)), ("target", (16, 1000), (0.1, 1))],
             [("grad_target", (16, 1000))], {"reduction": 1, "log_target": False}, types=("float", "float16"))], tol_scale=4),
    cann_ops("lerp", torch.lerp, tol_scale=2),
    cann_ops("less", torch.lt, [ew_spec((100, 100), 2, ("int32", "int8"), rng=(1, 100), out_types=("bool", "bool"))]),
    cann_ops("less_equal", torch.le),
    # examples/AclNNInvocationNaive gen_data.py: torch.linspace(0.0, 1.0, 8) float; plus counts over several blocks
    cann_ops("lin_space", lambda start, stop, num: torch.linspace(start.item(), stop.item(), int(num.item())),
             [spec([("start", (1,), (0, 0), None, [a]), ("stop", (1,), (0, 0), None, [b]),
                    ("num", (1,), (0, 0), ("int64",), [n])], [("output", (n,))])
              for a, b, n in ((0.0, 1.0, 8), (-3.0, 5.0, 1000), (2.0, -7.0, 4099))]),
    cann_ops("logical_not", torch.logical_not, [ew_spec((1, 1024), types=("bool",))]),
    cann_ops("logical_or", torch.logical_or, [ew_spec((2, 20), 2, ("bool",))]),
    Entry("cann-ops/moe_init_routing_v2", CANN_OPS, "src/math/moe_init_routing_v2/op_kernel/moe_init_routing_v2.cpp",
          _moe_init_routing_v2_cases),
    cann_ops("moe_soft_max_topk", _topk_softmax),
    cann_ops("mse_loss", lambda predict, label, reduction: ((predict - label) ** 2).mean().reshape(1),
             reduction=True, tol_scale=4),
    cann_ops("mse_loss_grad_v1", lambda predict, label, dout, reduction: 2 * (predict - label) * dout / predict.numel(),
             tol_scale=2),
    # examples/AclNNInvocationNaive/gen_data.py: x = a * b * s, the row mean m, the row mean v of (x - m)^2, then
    # beta - gamma / sqrt(v + add_y) * m + gamma / sqrt(v + add_y) * x, at [90, 1024] in [0, 1], s = add_y = 1. half
    # only: the kernel instantiates MulMulReduceMeanDTwice<half> whatever the OpDef's float/bf16 types say
    cann_ops("mul_mul_reduce_mean_d_twice", _mul_mul_reduce_mean_d_twice, [
        spec([("mul0_input0", (90, 1024), (0, 1)), ("mul0_input1", (90, 1024), (0, 1)), ("mul1_input0", (1,), (1, 1)),
              ("add_y", (1,), (1, 1)), ("gamma", (1, 1024), (0, 1)), ("beta", (1, 1024), (0, 1))],
             [("output", (90, 1024))], types=("float16",)),
        spec([("mul0_input0", (13, 512), (-2, 2)), ("mul0_input1", (13, 512), (-2, 2)), ("mul1_input0", (1,), (1.5, 1.5)),
              ("add_y", (1,), (0.5, 0.5)), ("gamma", (1, 512), (-1, 1)), ("beta", (1, 512), (-1, 1))],
             [("output", (13, 512))], types=("float16",)),
    ], st_files=False, reduction=True, tol_scale=4),
    # examples/AclNNInvocationNaive gen_data.py: s = sigmoid(x1 * t1); where(s < t2, s, 2 s) * x2 (a [1, 256, 128]
    # row broadcast over x1's [rows, 32768]) * t3, as [rows, 256, 128] half; t1, t2, t3 = 0.3, 0.1, 0.8
    cann_ops("mul_sigmoid", lambda x1, x2, t1, t2, t3: (
        torch.where(torch.sigmoid(x1 * t1) < t2, torch.sigmoid(x1 * t1), 2 * torch.sigmoid(x1 * t1))
        * x2.reshape(1, -1) * t3).reshape(x1.shape[0], 256, 128),
             [spec([("x1", (rows, 32 * 1024), (-3, 3)), ("x2", (1, 256, 128), (-3, 3))], [("out", (rows, 256, 128))],
                   {"t1": 0.3, "t2": 0.1, "t3": 0.8}, types=("float16",)) for rows in (25, 7)]),
    # gen_data.py: sigmoid(input * mulscalar1) * mulscalar2 + addscalar3 on 32 x 32 half, the scalars 1.2, 1.3, 1.4
    cann_ops("mul_sigmoid_mul_add_custom", lambda x, m1, m2, a3: torch.sigmoid(x * m1) * m2 + a3,
             [spec([("input", (32, 32), (-3, 3)), ("mulscalar1", (1,), (0, 0), None, [1.2]),
                    ("mulscalar2", (1,), (0, 0), None, [1.3]), ("addscalar3", (1,), (0, 0), None, [1.4])],
                   [("outputs", (32, 32))], types=("float16",)),
              spec([("input", (64, 1024), (-3, 3)), ("mulscalar1", (1,), (0, 0), None, [0.7]),
                    ("mulscalar2", (1,), (0, 0), None, [-1.1]), ("addscalar3", (1,), (0, 0), None, [0.25])],
                   [("outputs", (64, 1024))], types=("float16", "float"))], tol_scale=4),
    # its st file predates the OpDef's `value` input (a float scalar tensor) and passes value as an attribute
    cann_ops("muls", lambda x, value: x * value,
             [spec([("x", (125, 125)), ("value", (1,), (0, 0), ("float", "float"), [3.0])], [("y", (125, 125))],
                   types=("float16", "float"))], st_files=False),
    cann_ops("neg", torch.neg),
    Entry("cann-ops/non_finite_check", CANN_OPS, "src/math/non_finite_check/op_kernel/non_finite_check.cpp",
          non_finite_check_cases),
    # Pows (aclnnPowTensorScalar's kernel: x1 ** x2, x2 the exponent as a 1-element tensor). The kernel computes
    # only the exponents aclnn_pow.cpp routes to it: 0.5, 2, 3, -0.5, -1, -2 (pows_base.h ComputePowsBase; any
    # other leaves y unwritten), so gen_data.py's exponent 4.1 is not a case of this kernel: [2, 2] float with 3,
    # [64, 1000] half with 0.5 and float with -2 instead.
    cann_ops("pows", lambda x1, x2: torch.pow(x1, x2),
             [spec([("x1", (2, 2), (1, 4)), ("x2", (1,), (0, 0), None, [3.0])], [("y", (2, 2))]),
              spec([("x1", (64, 1000), (0.5, 2)), ("x2", (1,), (0, 0), None, [0.5])], [("y", (64, 1000))],
                   types=("float16",)),
              spec([("x1", (64, 1000), (0.5, 2)), ("x2", (1,), (0, 0), None, [-2.0])], [("y", (64, 1000))])],
             tol_scale=4),
    cann_ops("pre_layer_norm", lambda x, y, gamma, beta, epsilon: torch.nn.functional.layer_norm(
        x + y, gamma.shape, gamma, beta, epsilon), tol_scale=8),
    Entry("cann-ops/radius", CANN_OPS, "src/math/radius/op_kernel/radius.cpp", radius_cases),
    cann_ops("reciprocal", torch.reciprocal, [ew_spec((100, 100), rng=(0.1, 1))], tol_scale=2),
    # gen_data.py: float [8, 47, 123, 1023] to shape [123, 47, 8, 1023] (axis 0, num_axes -1: the whole shape)
    cann_ops("reshape", lambda x, shape, axis, num_axes: x.reshape(shape.tolist()),
             [spec([("x", (8, 47, 123, 1023), (-5, 5)), ("shape", (4,), (0, 0), ("int32",), [123, 47, 8, 1023])],
                   [("y", (123, 47, 8, 1023))], {"axis": 0, "num_axes": -1}),
              spec([("x", (3, 50, 7), (-5, 5)), ("shape", (2,), (0, 0), ("int32", "int32", "int32"), [21, 50])],
                   [("y", (21, 50))], {"axis": 0, "num_axes": -1}, types=("float16", "int8", "int64"))]),
    cann_ops("rsqrt", torch.rsqrt, [ew_spec((100, 100), rng=(0.1, 1))], tol_scale=4),
    cann_ops("sasum", lambda x, n, incx: x.abs().sum().reshape(1),
             [spec([("x", (2046,))], [("result", (1,))], {"n": 2046, "incx": 1})], reduction=True, tol_scale=4),
    # BLAS scasum (docs/aclnnScasum.md: sum |re| + |im| of a COMPLEX64 vector, a float result); gen_data.py: 2043
    cann_ops("scasum", lambda x, n, incx: (x.real.abs().sum() + x.imag.abs().sum()).reshape(1),
             [spec([("x", (k,), (-1, 1))], [("result", (1,), (0, 0), ("float",))], {"n": k, "incx": 1}, types=("complex64",))
              for k in (2043, 3, 100)], reduction=True, tol_scale=4),
    # TF ScatterMax (its gen_data.py golden, tf.scatter_max): var[indices[i], ...] = max(var[...], updates[i, ...]) in
    # place, repeated indices taking the max of all; gen_data.py: var [256] half in [-10, 10], 5 indices in [0, 200)
    cann_ops("scatter_max", lambda var, indices, updates, use_locking: var.index_reduce(0, indices, updates, "amax"),
             [spec([("var", (256,), (-10, 10)), ("indices", (5,), (0, 199), ("int32",)), ("updates", (5,), (-10, 10))],
                   [("var", (256,))], {"use_locking": False}, types=("float16",)),
              spec([("var", (64, 32), (-10, 10)), ("indices", (20,), (0, 63), ("int32", "int32")),
                    ("updates", (20, 32), (-10, 10))], [("var", (64, 32))], {"use_locking": False}, types=("float", "float16"))]),
    # gen_data.py: torch.scatter_reduce(x, 0, index, src, "amin", include_self=False), 5 x 5 float, index in [0, 4)
    cann_ops("scatter_reduce", lambda x, index, src, dim, reduce, include_self: x.scatter_reduce(
        dim, index, src, reduce, include_self=include_self),
             [spec([("x", (5, 5), (1, 5)), ("index", (5, 5), (0, 3), ("int32",)), ("src", (5, 5), (1, 5))], [("y", (5, 5))],
                   {"dim": 0, "reduce": "amin", "include_self": False}),  # its key 1; the rest take key 2
              spec([("x", (8, 6), (1, 5)), ("index", (8, 6), (0, 5), ("int32",) * 2), ("src", (8, 6), (1, 5))], [("y", (8, 6))],
                   {"dim": 1, "reduce": "sum", "include_self": True}, types=("float", "float16")),
              spec([("x", (6, 10), (1, 5)), ("index", (4, 10), (0, 5), ("int32",) * 2), ("src", (4, 10), (1, 5))],
                   [("y", (6, 10))], {"dim": 0, "reduce": "amax", "include_self": False}, types=("float", "float16")),
              spec([("x", (5, 5), (1, 5)), ("index", (5, 5), (0, 3), ("int32",)), ("src", (5, 5), (1, 5))], [("y", (5, 5))],
                   {"dim": 0, "reduce": "mean", "include_self": True})]),
    cann_ops("scatter_sub", _scatter_sub),
    # BLAS scnrm2 (docs/aclnnScnrm2.md: sqrt(sum re^2 + im^2), COMPLEX64 in, float out); gen_data.py: 2043; 100 takes
    # the tiling's other branch (fewer 8-float blocks than cores). Below 4 elements (one block of work) the other
    # blocks return before its SyncAll: on the NPU that hangs (the emulator says so), so no such case here.
    cann_ops("scnrm2", lambda x, n, incx: torch.view_as_real(x).norm().reshape(1),
             [spec([("x", (k,), (-1, 1))], [("result", (1,), (0, 0), ("float",))], {"n": k, "incx": 1}, types=("complex64",))
              for k in (2043, 100)], reduction=True, tol_scale=4),
    cann_ops("scopy", lambda x, n, incx, incy: x, [spec([("x", (2048,))], [("y", (2048,))], {"n": 2048, "incx": 1, "incy": 1})]),
    # examples/AclNNInvocationNaive/gen_data.py: softmax over the last axis of where(sel, input1, input2), [64, 1, 60]
    # half in [0, 1]: the kernel is written for that shape only (its WholeReduceMax/Sum counts 64 and 60, <bool, half>)
    # and for 910B's 48 AIV cores: 32 blocks of 120 elements, tiles of 60 (with 8 cores its tile is 240, whose bool
    # mask rows are 240 B, against Select's 32-B rule)
    cann_ops("select_reduce_max_d_sub_exp_reduce_sum_d_real_div",
             lambda sel, a, b: torch.softmax(torch.where(sel.bool(), a.float(), b.float()), -1),
             [spec([("sel", (64, 1, 60), (0, 1), ("bool",)), ("input1", (64, 1, 60), (0, 1)),
                    ("input2", (64, 1, 60), (0, 1))], [("ouput", (64, 1, 60))], types=("float16",))],
             st_files=False, reduction=True, cores=48),
    cann_ops("sin", torch.sin, [ew_spec((1024, 1024), rng=(-5, 5))], tol_scale=4),
    cann_ops("snrm2", lambda x, n, incx: x.norm().reshape(1),
             [spec([("x", (2046,))], [("result", (1,))], {"n": 2046, "incx": 1})], reduction=True, tol_scale=4),
    cann_ops("spence", spence, tol_scale=8),
    cann_ops("sqrt", torch.sqrt, [ew_spec((1024, 1024), rng=(0.1, 1))]),
    cann_ops("sscal", lambda x, alpha, n, incx: x * alpha,
             [spec([("x", (2048,))], [("x", (2048,))], {"alpha": 1.5, "n": 2048, "incx": 1})]),
    # gen_data.py: the last axis' second half negated, [1, 128, 1, 128] half. Half only: the kernel instantiates
    # StridesliceNegConcatV2<half> whatever the dtype (the OpDef's float and bf16 are not implemented)
    cann_ops("strideslice_neg_concat_v2", lambda x: torch.cat([x[..., :x.shape[-1] // 2], -x[..., x.shape[-1] // 2:]], -1),
             [spec([("input", shape, (-3, 3))], [("output", shape)], types=("float16",))
              for shape in ((1, 128, 1, 128), (2, 64, 4, 96))]),
    cann_ops("sub_frameworklaunch", torch.sub, [ew_spec((8, 2048), 2, ("float16",), names=["x", "y"], out="z")]),
    cann_ops("swish", lambda x, scale: x * torch.sigmoid(scale * x),
             [spec([("x", (100, 100))], [("y", (100, 100))], {"scale": 1.0}, types=("float", "float16"))], tol_scale=4),
    cann_ops("tanh", torch.tanh, [ew_spec((2000, 1))], tol_scale=4),
    cann_ops("tril", lambda x, diagonal: torch.tril(x, diagonal)),
    cann_ops("triu", lambda x, diagonal: torch.triu(x, diagonal)),
    cann_ops("trunc", torch.trunc, [ew_spec((8, 2048), names=["input_x"], out="output_y", rng=(-10, 10))]),
    cann_ops("unalign_add", torch.add, [ew_spec((8, 2048), 2, ("float16",), names=["x", "y"], out="z")]),
    cann_ops("xlogy", torch.xlogy, [ew_spec((128, 32), 2, rng=(0.1, 10))], tol_scale=4),
]


# asc-devkit's kernel-launch example programs at the SOURCES commit, as asc_program.example_membership
# selects them (fixed before their first run; `--membership` re-derives the list and compares): every
# examples/01_simd_cpp_api/** program built for dav-2201 (Atlas A2/A3) by default, without the cube unit or
# the 950-only register/SIMT APIs, whose README runs ./demo and checks the result. Each runs every scenario
# its CMakeLists lists, as its README does (asc_program.py). Session 16: the cube check reads the headers an
# example includes as well as its .asc (as the rule says, "without the cube unit"), which takes out
# 03_basic_api/05_sync_control/cross_core_set_wait_flag (a mixed AIC/AIV kernel: KernelMmad with LoadData
# and Mmad in its .h); it had failed to compile (CrossCoreWaitFlag), 87 -> 86.
PROGRAM_ROOT = "examples/01_simd_cpp_api/"
DEVKIT_PROGRAMS = [
    "00_introduction/01_add/add",
    "00_introduction/01_add/add_tpipe_tque",
    "01_utilities/04_profiling/msprof",
    "01_utilities/05_sanitizer/ms_sanitizer",
    "02_features/00_framework/04_aclgraph",
    "02_features/02_tiling_selector/vector_tiling_strategy",
    "03_basic_api/00_data_movement/copy_ub2ub",
    "03_basic_api/00_data_movement/data_copy_gm2ub_slice",
    "03_basic_api/00_data_movement/data_copy_pad_gm2ub_ub2gm",
    "03_basic_api/01_memory_vector_compute/brcb",
    "03_basic_api/01_memory_vector_compute/cast",
    "03_basic_api/01_memory_vector_compute/compare",
    "03_basic_api/01_memory_vector_compute/create_vec_index",
    "03_basic_api/01_memory_vector_compute/duplicate",
    "03_basic_api/01_memory_vector_compute/element_wise_arithmetic",
    "03_basic_api/01_memory_vector_compute/element_wise_compound_compute",
    "03_basic_api/01_memory_vector_compute/element_wise_logic",
    "03_basic_api/01_memory_vector_compute/gather",
    "03_basic_api/01_memory_vector_compute/mrg_sort",
    "03_basic_api/01_memory_vector_compute/reduce",
    "03_basic_api/01_memory_vector_compute/reduce_computation",
    "03_basic_api/01_memory_vector_compute/reduce_data_block",
    "03_basic_api/01_memory_vector_compute/reduce_pair_elem",
    "03_basic_api/01_memory_vector_compute/reduce_repeat",
    "03_basic_api/01_memory_vector_compute/select",
    "03_basic_api/01_memory_vector_compute/transpose",
    "03_basic_api/04_memory_management/tbufpool_management",
    "03_basic_api/04_memory_management/tmp_buffer",
    "03_basic_api/05_sync_control/data_sync_barrier",
    "03_basic_api/05_sync_control/ib_set_wait",
    "03_basic_api/05_sync_control/sequential_block_sync",
    "03_basic_api/05_sync_control/sync_all",
    "03_basic_api/05_sync_control/task_sync",
    "03_basic_api/06_atomic/data_movement_with_atomic_operations",
    "03_basic_api/06_atomic/set_atomic_deterministic_computation",
    "03_basic_api/07_tpipe_tque/tpipe_reuse",
    "03_basic_api/09_utils/gm_by_dcache",
    "03_basic_api/09_utils/gm_by_pass_dcache",
    "04_advanced_api/01_activation/geglu",
    "04_advanced_api/01_activation/gelu",
    "04_advanced_api/01_activation/logsoftmax",
    "04_advanced_api/01_activation/sigmoid",
    "04_advanced_api/01_activation/softmax",
    "04_advanced_api/01_activation/softmaxflashv2",
    "04_advanced_api/01_activation/softmaxflashv3",
    "04_advanced_api/01_activation/softmaxgrad",
    "04_advanced_api/01_activation/swiglu",
    "04_advanced_api/01_activation/swish",
    "04_advanced_api/02_normalization/deepnorm",
    "04_advanced_api/02_normalization/layernorm",
    "04_advanced_api/02_normalization/layernorm_v2",
    "04_advanced_api/02_normalization/rmsnorm",
    "04_advanced_api/02_normalization/welford",
    "04_advanced_api/03_quantization/antiquant",
    "04_advanced_api/03_quantization/dequant",
    "04_advanced_api/03_quantization/quant",
    "04_advanced_api/04_reduce/reducemax",
    "04_advanced_api/04_reduce/sum",
    "04_advanced_api/05_sort/sort",
    "04_advanced_api/05_sort/topk",
    "04_advanced_api/06_index/arange",
    "04_advanced_api/07_filter/dropout",
    "04_advanced_api/07_filter/select",
    "04_advanced_api/08_transpose/add_broadcast",
    "04_advanced_api/08_transpose/broadcast",
    "04_advanced_api/08_transpose/fill",
    "04_advanced_api/08_transpose/pad",
    "04_advanced_api/08_transpose/transdata",
    "04_advanced_api/08_transpose/unpad",
    "04_advanced_api/10_math/acosh",
    "04_advanced_api/10_math/axpy_half_float",
    "04_advanced_api/10_math/ceil",
    "04_advanced_api/10_math/clampmin",
    "04_advanced_api/10_math/cumsum",
    "04_advanced_api/10_math/erf",
    "04_advanced_api/10_math/exp",
    "04_advanced_api/10_math/fmod",
    "04_advanced_api/10_math/frac",
    "04_advanced_api/10_math/log",
    "04_advanced_api/10_math/power",
    "04_advanced_api/10_math/xor",
    "04_advanced_api/11_utils/type_traits",
    "05_best_practices/00_vector_compute/add_high_performance",
    "05_best_practices/04_memory_access/bank_conflict_nd2nz",
    "05_best_practices/04_memory_access/bank_conflict_ub",
    "06_compatibility_guide/scatter",
]
PROGRAM_ENTRIES = [Entry(f"asc/{p}", DEVKIT, PROGRAM_ROOT + p, style="program") for p in DEVKIT_PROGRAMS]


CORPUS: list[Entry] = [
    # --- hansheng1001/AscendCContest: contest op projects (framework launch, tiling keys per dtype). Cases at the
    # shapes, dtype and value ranges of each op's own test (<Op>Test/scripts/gen_data.py, run through AclNN:
    # aclrtMalloc'd buffers); ops whose test the manifest does not follow say so
    Entry("contest/addcmul", CONTEST, "01Addcmul/FrameworkLaunch/Addcmul/op_kernel/addcmul.cpp", addcmul_cases),
    Entry("contest/fast_gelu", CONTEST, "02FastGelu/FrameworkLaunch/FastGelu/op_kernel/fast_gelu.cpp", ew(fast_gelu, 1, dtypes=(F16,), shapes=((1024,),), lo=1, hi=10)),
    Entry("contest/fast_gelu_grad", CONTEST, "03FastGeluGrad/FrameworkLaunch/FastGeluGrad/op_kernel/fast_gelu_grad.cpp",
          ew(fast_gelu_grad, 2, tol_scale=4, dtypes=(F16,), shapes=((1024,),), lo=1, hi=10)),
    Entry("contest/less_equal", CONTEST, "04LessEqual/FrameworkLaunch/LessEqual/op_kernel/less_equal.cpp",
          compare_cases(torch.le, dtypes=(F16,), shapes=((1, 2048),), lo=1, hi=100)),
    Entry("contest/less_equal_v2", CONTEST, "04LessEqual/FrameworkLaunch/LessEqualV2/op_kernel/less_equal.cpp",
          compare_cases(torch.le, dtypes=(F16,), shapes=((1, 2048),), lo=1, hi=100)),
    Entry("contest/mse_loss", CONTEST, "05MseLoss/FrameworkLaunch/MseLoss/op_kernel/mse_loss.cpp", mse_loss_cases),
    Entry("contest/mse_loss_grad", CONTEST, "06MseLossGrad/FrameworkLaunch/MseLossGrad/op_kernel/mse_loss_grad.cpp",
          lambda: mse_grad_cases((F16,), ((1024,),), 1, 10)),
    Entry("contest/clip_by_value", CONTEST, "07ClipByValue/FrameworkLaunch/ClipByValue/op_kernel/clip_by_value.cpp",
          clip_cases((F16,), ((8, 2048),), 1, 10, bounds=(2.0, 7.0))),  # its test: min in [1, 3], max in [4, 10]
    Entry("contest/lp_norm_v2", CONTEST, "08LpNormV2/FrameworkLaunch/LpNormV2/op_kernel/lp_norm_v2.cpp",
          reduction_cases(lambda x: x.norm(), dtypes=(F16,), shapes=((2, 1, 1024),), lo=1, hi=2, attrs={"p": 2.0})),
    Entry("contest/spence", CONTEST, "09Spence/FrameworkLaunch/Spence/op_kernel/spence.cpp",
          ew(spence, 1, dtypes=(F16,), shapes=((1024,),), lo=1, hi=10, tol_scale=8)),
    Entry("contest/scatter_sub", CONTEST, "10ScatterSub/FrameworkLaunch/ScatterSub/op_kernel/scatter_sub.cpp",
          scatter_cases("sub", out_listed=True, **SCATTER_SUB_TEST)),
    Entry("contest/scatter_sub_v0.2", CONTEST, "10ScatterSub/FrameworkLaunch/ScatterSub_v0.2/op_kernel/scatter_sub.cpp",
          scatter_cases("sub", out_listed=False, **SCATTER_SUB_TEST)),
    Entry("contest/scatter_sub_v1", CONTEST,
          "10ScatterSub/FrameworkLaunch/ScatterSub_v1/FrameworkLaunch/ScatterSub/op_kernel/scatter_sub.cpp",
          scatter_cases("sub", out_listed=False, **SCATTER_SUB_TEST)),
    Entry("contest/scatter_max", CONTEST, "11ScatterMax/FrameworkLaunch/ScatterMax/op_kernel/scatter_max.cpp",
          scatter_cases("max", out_listed=True)),
    # --- linnlh/ascendc-competition-s3 (season 3 contest entries)
    Entry("s3-linnlh/asinh", S3, "basic/asinh/asinh/op_kernel/asinh.cpp", ew(torch.asinh, 1, tol_scale=4)),
    Entry("s3-linnlh/asinh_grad", S3, "basic/asinh_grad/asinh_grad/op_kernel/asinh_grad.cpp", s3_asinh_grad_cases),
    Entry("s3-linnlh/div", S3, "basic/div/div/op_kernel/div.cpp", ew(torch.div, 2, lo=0.5, hi=2.0)),
    Entry("s3-linnlh/is_close", S3, "basic/is_close/is_close/op_kernel/is_close.cpp", s3_is_close_cases),
    Entry("s3-linnlh/log_sum_exp", S3, "basic/logsum_exp/logsum_exp/op_kernel/log_sum_exp.cpp",
          logsumexp_cases(lambda nd: {"dim": [nd - 1], "keep_dim": False})),
    Entry("s3-linnlh/non_max_suppression", S3,
          "basic/non_max_suppression/non_max_suppression/op_kernel/non_max_suppression.cpp", non_max_suppression_cases),
    Entry("s3-linnlh/not_equal", S3, "basic/not_equal/not_equal/op_kernel/not_equal.cpp", s3_not_equal_cases),
    Entry("s3-linnlh/replication_pad2d", S3, "basic/replication_pad2d/replication_pad2d/op_kernel/replication_pad2d.cpp",
          replication_pad_cases()),
    # Kernel faults (h23s), both in its half specialisation KernelScatterElements<half>, wrong on the NPU too (the
    # emulator's output equals a replay of the kernel's own steps in its UB layout; the float template passes):
    # (1) its own Case3 (var [32, 64, 64], indices [32, 32, 32], axis 2, the last): the contiguous path takes
    # indices' flat row i for var's flat row i (varOffset = i * shapes[0][axis]), i.e. it assumes var and indices
    # agree off the axis; row i = (a, b) of indices belongs to var row a * 64 + b, so the scatters of all but the
    # first 32 of its 1024 index rows land in the wrong var rows (max error 19.8). (2) a non-last axis (the manifest's var [32, 24], k = 8, axis 0): CopyOut
    # writes back shapes[1][axis] = 8 rows, not shapes[0][axis] = 32, so a scatter into row >= 8 is lost; and
    # varsfp32Buf / updatesfp32Buf hold ceil(n / 8) * 8 floats while Cast writes n * 16 (one per 32-B block), so
    # the updates' Cast lands on varsfp32's rows 2..9 (strict bounds refuse it; device bounds: max error 3.66).
    Entry("s3-linnlh/scatter_elements", S3, "basic/scatter_elements/scatter_elements/op_kernel/scatter_elements.cpp",
          scatter_elements_cases()),
    Entry("s3-linnlh/softmax", S3, "basic/softmax/softmax/op_kernel/softmax.cpp", softmax_cases()),
    Entry("s3-linnlh/nll_loss", S3, "perf/nll_loss/nll_loss/op_kernel/nll_loss.cpp", nll_loss_cases),
    # --- KiaraStark/ascendc-homework: another author's season 3 entries, course homework, samples
    # Kernel finding (h23w): its half path DataCopies `width` halves per row; at width 40 (80 B) the asc-devkit
    # DataCopy page rounds the move DOWN to 64 B, so x[32:40] of each row is never loaded and y[32:40] never
    # stored, while Cast/Exp/ReduceSum/Div run over all 40 (softmax.cpp:141-164): wrong on the NPU too. float passes.
    Entry("s3-kiara/softmax", HOMEWORK, "Ascend_S3-main/01Softmax/op_kernel/softmax.cpp", softmax_cases()),
    Entry("s3-kiara/div", HOMEWORK, "Ascend_S3-main/02Div/op_kernel/div.cpp", ew(torch.div, 2, lo=0.5, hi=2.0)),
    Entry("s3-kiara/not_equal", HOMEWORK, "Ascend_S3-main/03NotEqual/op_kernel/not_equal.cpp", s3_not_equal_cases),
    Entry("s3-kiara/asinh", HOMEWORK, "Ascend_S3-main/04Asinh/op_kernel/asinh.cpp", ew(torch.asinh, 1, tol_scale=4)),
    Entry("s3-kiara/asinh_grad", HOMEWORK, "Ascend_S3-main/05AsinhGrad/op_kernel/asinh_grad.cpp", s3_asinh_grad_cases),
    Entry("s3-kiara/scatter_elements", HOMEWORK, "Ascend_S3-main/06ScatterElements/op_kernel/scatter_elements.cpp",
          scatter_elements_cases()),
    # Kernel fault (h23s): no broadcasting anywhere. Its tiling takes totalLength = x1's element count
    # (GetInputTensor(0)->GetShapeSize(): 16 for the (16, 1) x (8, 16, 1, 32) uint8 case) and the kernel runs
    # elementwise over that, padded to 256: it reads 256 B of x1 (its 16 values, then past its 64-B allocation:
    # device bounds read the guard's poison) against x2's first 256 and writes y's first 256 of 65536; the other
    # 65280 outputs are never written (an all-False-poisoned run shows it; the first 256 equal an elementwise
    # isclose of exactly those bytes). Its other three (same-shape) cases pass.
    Entry("s3-kiara/is_close", HOMEWORK, "Ascend_S3-main/08IsClose/op_kernel/is_close.cpp", s3_is_close_cases),
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
    # Kernel finding (h23w): Compare's count form over a tail of count*sizeof(T) % 256 != 0 (not_equal.cpp:79-96;
    # (64,) half is 128 B): the Compare page computes whole 256-B blocks only and CANN's CPU-debug build asserts;
    # the emulator raises as that build does (docs/emulator.md, Compare's count form and 256 B).
    Entry("s3-xsh/not_equal", XSH, "03-NotEqual/op_kernel/not_equal.cpp", s3_not_equal_cases),
    Entry("s3-xsh/asinh", XSH, "04-Asinh/op_kernel/asinh.cpp", ew(torch.asinh, 1, tol_scale=4)),
    Entry("s3-xsh/scatter_elements", XSH, "06-ScatterElements/op_kernel/scatter_elements.cpp", scatter_elements_cases()),
    Entry("s3-xsh/log_sum_exp", XSH, "09-LogSumExp/op_kernel/log_sum_exp.cpp",
          logsumexp_cases(lambda nd: {"dim": [nd - 1], "keep_dim": False})),
    # --- Youshikawa/ascendC-S2: season 2 entries
    Entry("s2/as_strided", S2, "ascends2/AsStrided/AsStrided/op_kernel/as_strided.cpp", as_strided_cases),
    # h23w: at (8, 128) half the kernel's running sum is a half tensor (cumsum.cpp:167-168, one rounding per step);
    # the emulator's output equals that sequential half sum bit for bit; partial sums reach |11| in row 0, so
    # 0.039 at a final value of -0.37 is the kernel's half accumulation (cumsum_cases scales half's tolerance
    # with the largest partial sum).
    Entry("s2/cumsum", S2, "ascends2/Cumsum/Cumsum/op_kernel/cumsum.cpp", cumsum_cases),
    # Kernel finding (h23w): SetGlobalBuffer(x) / (y) without a GetBlockIdx offset (gelu.cpp:23-24): each of the
    # 6 blocks computes y[0:blockLength), y[22272:] stays unwritten at (64, 2048); its float path's ErfCustom
    # adds 1 to a y it never computed (the erf polynomial is commented out, gelu.cpp:290-300).
    Entry("s2/gelu", S2, "ascends2/Gelu/Gelu/op_kernel/gelu.cpp", ew(tanh_gelu, 1, tol_scale=4)),
    Entry("s2/global_avg_pool", S2, "ascends2/GlobalAvgPool/GlobalAvgPool/op_kernel/global_avg_pool.cpp",
          global_avg_pool_cases),
    Entry("s2/histogram", S2, "ascends2/Histogram/Histogram/op_kernel/histogram.cpp", histogram_cases),
    Entry("s2/lerp", S2, "ascends2/Lerp/Lerp/op_kernel/lerp.cpp", ew(lambda s, e, w: s + w * (e - s), 3, tol_scale=2)),
    Entry("s2/reduce_sum", S2, "ascends2/ReduceSum/ReduceSum/op_kernel/reduce_sum.cpp", reduce_sum_cases),
    # Kernel finding (h23w): op_host builds tileMask/finalMask in locals and never calls set_tileMask/set_finalMask
    # (three_nn.cpp:51-68), so the kernel's masks are 0 and ReduceMin writes nothing (the index read is y data);
    # Compute never stores c_min*/min*_pos into min1..3/idx1..3 either (op_kernel/three_nn.cpp:128-150): unfinished.
    Entry("s2/three_nn", S2, "ascends2/ThreeNN/ThreeNN/op_kernel/three_nn.cpp", three_nn_cases),
    Entry("s2/tril", S2, "ascends2/Tril/Tril/op_kernel/tril.cpp", tri_cases(torch.tril)),
    Entry("s2/triu", S2, "ascends2/Triu/Triu/op_kernel/triu.cpp", tri_cases(torch.triu)),
    Entry("s2/xlogy", S2, "ascends2/xlogy/op_kernel/xlogy.cpp", ew(xlogy, 2, lo=0.1, hi=3.0, tol_scale=4)),
    # --- A-Y-1/AscendC-S4: season 4 entries (the MatMul entry is a cube kernel, out of scope)
    Entry("s4/eye", S4, "Eye/op_kernel/eye.cpp", eye_cases),
    Entry("s4/heaviside", S4, "Heaviside/op_kernel/heaviside.cpp", heaviside_cases),
    # --- JeffDing/AscendC_Code: sinh sample, two tilings; at its AclNNInvocation test's shape (8 x 2048 half in [1, 10])
    Entry("jeff/sinh", JEFF, "SinhCustomSample/FrameworkLaunch/SinhCustom/op_kernel/sinh_custom.cpp",
          ew(torch.sinh, 1, dtypes=(F16,), shapes=((8, 2048),), lo=1, hi=10, tol_scale=4)),
    Entry("jeff/sinh_segmentation", JEFF, "SinhCustomSample/FrameworkLaunch/SinhCustomSegmentation/op_kernel/sinh_custom.cpp",
          ew(torch.sinh, 1, dtypes=(F16,), shapes=((8, 2048),), lo=1, hi=10, tol_scale=4)),
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
    *CANN_OPS_ENTRIES,
    *PROGRAM_ENTRIES,
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trex.codegen_ascendc.emulator.corpus_manifest", description=corpus.__doc__.splitlines()[0])
    ap.add_argument("--root", help="directory with the source repositories (<owner>+<name>/)")
    ap.add_argument("--only", nargs="*", help="entry ids to run")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--report", help="print the summary and table of a --json file of an earlier run, run nothing")
    ap.add_argument("--membership", action="store_true",
                    help="re-derive the asc-devkit program list from --root (asc_program.example_membership), "
                         "compare it with DEVKIT_PROGRAMS and run nothing")
    ap.add_argument("--cores", type=int, default=8, help="AIV cores the host tiling functions see (default 8)")
    ap.add_argument("--bounds", choices=("device", "strict"), default="device",
                    help="the emulator's bounds mode (default device: what faults on the NPU fails, the rest of "
                         "what CANN's CPU-debug build refuses is listed per kernel; strict: that refuses it)")
    a = ap.parse_args(argv)
    if a.report:
        results = [corpus.Result(**r) for r in json.loads(Path(a.report).read_text())]
        print(corpus.summary(results))
        print()
        print(markdown(results))
        return 0
    if not a.root:
        print("corpus: give --root DIR (the source repositories) or --report RESULTS.json", file=sys.stderr)
        return 2
    root = Path(a.root)
    if not root.is_dir():
        print(f"corpus: --root {a.root!r} is not a directory; clone the SOURCES repositories there", file=sys.stderr)
        return 2
    if a.membership:
        from .asc_program import example_membership
        members, excluded = example_membership(root / DEVKIT)
        derived = [m.removeprefix(PROGRAM_ROOT) for m in members]
        for why in sorted(set(excluded.values())):
            print(f"excluded ({sum(v == why for v in excluded.values())}): {why}")
        if derived != DEVKIT_PROGRAMS:
            print(f"corpus: the rule gives {len(derived)} programs, DEVKIT_PROGRAMS lists {len(DEVKIT_PROGRAMS)}; "
                  f"added {sorted(set(derived) - set(DEVKIT_PROGRAMS))}, gone {sorted(set(DEVKIT_PROGRAMS) - set(derived))}",
                  file=sys.stderr)
            return 1
        print(f"{len(derived)} programs, as DEVKIT_PROGRAMS lists them")
        return 0
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
        r = run_entry(root, e, a.cores, a.bounds)
        results.append(r)
        print(f"{r.id:28s} {r.result:10s} {r.seconds:5.1f}s {r.detail[:150]}", flush=True)
    print()
    print(corpus.summary(results))
    print()
    print(markdown(results))
    if a.json:
        _atomic_write(Path(a.json), json.dumps([r.__dict__ for r in results], indent=1).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
