"""The judge of a candidate: fresh inputs, poisoned outputs, fp64 and eager references, ulp-level
numerics, and (Ascend) byte counts of its own.

Ascend (`check_ascend`, run in the searching process, which never loads a candidate's library): the
candidate's library is built by trex.tuning.sandbox (content hash recorded) and every launch runs in
a throw-away worker (sandbox.run) that hands back output bytes and counters, never a verdict. One
evaluation is one worker run of these launches, each on inputs drawn fresh (a 63-bit seed from the
OS's random source, a magnitude 1 / 1e-3 / 8, a value distribution normal / uniform / heavy-tailed;
never a fixed seed), per check:

  * the searched shape on the configuration's cores, with the emulator's pipe-synchronisation checks
    on, and again with them off (an NPU has no checks: a kernel that behaves differently when watched
    is wrong in one of the two),
  * the row counts of the store bucket the entry will serve (`bucket_row_counts`: every count when the
    bucket has at most ROW_SAMPLE of them, else ROW_SAMPLE drawn without replacement; spread over the
    checks),
  * the profile's launches (`profile_rows`: one core over each distinct per-core row count), with and
    without the sync checks: the counters the profile is priced from come from launches whose
    outputs are judged like every other.

Every launch's outputs are NaN-poisoned before the run and compared with the references
(assert_close_to_reference, DESIGN.md's rule) and the ulp checks (`ulp_checks`: signed and
sign-adjusted mean error against fp64 in units of the output's ulp, and the error common to a row,
each against eager's), a kernel that writes into its inputs is rejected, launches of one problem
(same shape and cores: sync on/off, other checks' data) must count alike, and each launch's MTE2/MTE3
bytes must be at least what the program and tiling move (the cost model's transfer plan, derived
without the kernel's counters): a kernel that erases its counters or loads through raw pointers
counts fewer. A crash, a timeout, an untrustworthy worker answer (sandbox.SandboxError) is a rejection.

CUDA (`check`, in the verifier process `Verifier` starts: `python -I` on this file's absolute path,
answers framed with a per-run nonce on stdout): a Triton candidate is Python that runs in that process,
so its verdict is as trustworthy as the candidate's Python (docs/tuning.md).

TF32 rule (cuda): a program with a contraction (`matvec` / `matvec_t`; the `rows_matmul` host step is fp32-accurate)
runs it on the tensor cores in TF32 on cuda (issue 6 allows it, as DeepSeek's mHC kernels do), so its
"eager" baseline is the same chain with TF32 products: the reference interpreter with every matrix
product's fp32 operands rounded to TF32 (harness.tf32_products), once rounding to nearest and once
truncating, and per output the one farther from fp64. Under Triton's interpreter (TRITON_INTERPRET=1)
fp32 -> bf16 casts truncate (Triton 3.6), so the eager baseline truncates the same casts
(harness.truncating_bf16_casts) and the rounding checks are off.
"""
from __future__ import annotations

import json
import math
import os
import random
import secrets
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass

import sympy
import torch

from trex.compiler.kernel_ir import ROWS, TensorKind, bind_sizes
from trex.compiler.testing import assert_close_to_reference

from . import harness

SCALES = (1.0, 1e-3, 8.0)
# Row counts of the store bucket checked per evaluation beyond the searched one: all of them when the
# bucket has at most this many, else this many drawn without replacement (`miss_probability`).
ROW_SAMPLE = 16

# ulp checks of bf16/fp16 outputs (`ulp_checks`): a mean error (signed, and signed towards zero) that
# differs from eager's by more than BIAS_ULP ulp and BIAS_SIGMAS standard errors is a rounding-mode or
# bias bug; a mean square of per-row mean errors above ROW_RATIO x eager's + ROW_FLOOR_ULP^2 is an
# error common to a row (a per-row factor rounded to 16 bits before it scales the row).
BIAS_ULP, BIAS_SIGMAS = 0.1, 6.0
ROW_RATIO, ROW_FLOOR_ULP, ROW_MIN_COLS, ROW_MIN_ROWS = 8.0, 0.1, 16, 4
MANTISSA_BITS = {torch.bfloat16: 7, torch.float16: 10}

_OS_RANDOM = random.SystemRandom()


def draw_case(rng: random.Random | None = None) -> dict:
    """One input case: a 63-bit seed, a magnitude and a value distribution, from the OS's random source
    (never a fixed seed: what a candidate saw in one evaluation says nothing about the next)."""
    rng = rng or _OS_RANDOM
    return {"seed": rng.getrandbits(63), "scale": rng.choice(SCALES),
            "distribution": rng.choice(sorted(harness.DISTRIBUTIONS))}


def bucket_rows(program, named_sizes: dict) -> tuple[int, int] | None:
    """The ROWS range a stored configuration will be used for (the store's bucket: up to the next power of
    two), or None when ROWS is tied to other sizes (row-mapped inputs, row groups: RoPE's tables)."""
    if any(not t.row_map.is_identity for t in program.tensors) or getattr(program, "row_group", None) is not None:
        return None
    rows = int(named_sizes["ROWS"])
    hi = 1 if rows <= 1 else 1 << (rows - 1).bit_length()
    return (hi // 2 + 1, hi) if hi > 1 else None


def bucket_row_counts(program, named_sizes: dict, rng: random.Random | None = None,
                      sample: int = ROW_SAMPLE) -> tuple[list[int], int]:
    """(row counts of the bucket to check besides the searched one, how many other counts the bucket
    has): all of them when there are at most `sample`, else `sample` drawn without replacement."""
    b = bucket_rows(program, named_sizes)
    if b is None:
        return [], 0
    others = [r for r in range(b[0], b[1] + 1) if r != int(named_sizes["ROWS"])]
    if len(others) <= sample:
        return others, len(others)
    return sorted((rng or _OS_RANDOM).sample(others, sample)), len(others)


def miss_probability(checked: int, others: int, bad: int = 1) -> float:
    """P(a kernel wrong at `bad` of the bucket's `others` row counts passes), `checked` of them drawn
    uniformly without replacement: C(others - bad, checked) / C(others, checked)."""
    if others == 0 or bad <= 0:
        return 0.0
    if checked > others - bad:
        return 0.0
    return math.comb(others - bad, checked) / math.comb(others, checked)


def _tol(dtype: str) -> float:
    return {"bf16": 1e-2, "fp16": 1e-3}.get(dtype, 1e-4)


def _device(req: dict) -> str:
    """Where a check's inputs, kernel run and references live: the GPU for a CUDA candidate when there
    is one (references of DeepSeek-V4 shapes take milliseconds there, seconds to minutes on the CPU),
    else the CPU (the Ascend emulator; Triton's interpreter in the CPU tests)."""
    return "cuda" if req["target"] == "cuda" and torch.cuda.is_available() else "cpu"


# A row-grouped program (RoPE: the CDIV heads of a token share a table row) makes the reference
# interpreter walk one tile per group; past this many groups the references are computed on row
# windows of WINDOW_GROUPS groups (the first, the last and a drawn one) instead of every row, and the
# whole output is still checked for unwritten (NaN-poisoned) elements.
WINDOW_ABOVE_GROUPS = 1024
WINDOW_GROUPS = 64


def _windows(program, sizes: dict, seed: int) -> list[tuple[int, int]] | None:
    """Row windows [lo, hi) to compare on, or None to compare every row."""
    from trex.compiler.kernel_ir import ROWS, TensorKind
    if getattr(program, "row_group", None) is None or any(t.kind != TensorKind.ROW for t in program.outputs):
        return None
    group = int(sympy.sympify(program.row_group).subs(sizes))
    rows = int(sizes[ROWS])
    groups = rows // group
    if groups <= WINDOW_ABOVE_GROUPS or rows % group:
        return None
    span = WINDOW_GROUPS * group
    drawn = (seed % (groups - WINDOW_GROUPS)) * group
    return sorted({(0, span), (drawn, drawn + span), (rows - span, rows)})


# ------------------------------------------------------------------------------------------------
# numerics at the ulp level


def _ulp(ref: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at each fp64 value (subnormal spacing below the smallest normal)."""
    _, e = torch.frexp(ref)
    e_min = int(torch.frexp(torch.tensor(torch.finfo(dtype).tiny, dtype=torch.float64))[1])
    return torch.ldexp(torch.ones_like(ref), e.clamp(min=e_min) - 1 - MANTISSA_BITS[dtype])


def _ulp_stats(out: torch.Tensor, ref: torch.Tensor) -> dict | None:
    a, r = out.double(), ref.double()
    ok = torch.isfinite(a) & torch.isfinite(r) & (r != 0)
    if int(ok.sum()) < 16:
        return None
    d = torch.where(ok, (a - r) / _ulp(r, out.dtype), torch.zeros_like(r))
    n = ok.sum()
    signed = d[ok]
    toward_zero = (d * torch.sign(r))[ok]
    st = {"n": int(n), "signed": signed.mean().item(), "signed_var": signed.var().item(),
          "toward_zero": toward_zero.mean().item(), "toward_zero_var": toward_zero.var().item()}
    if d.dim() >= 2 and d.shape[0] >= ROW_MIN_ROWS and d[0].numel() >= ROW_MIN_COLS:
        cnt = ok.reshape(d.shape[0], -1).sum(1).clamp(min=1)
        # an additive error common to a row shows in the row's mean signed error, a multiplicative one
        # (a rounded per-row factor) in its mean error towards zero (the signed one cancels over signs)
        for name, e in (("row_common", d), ("row_common_relative", d * torch.sign(r))):
            st[name] = ((e.reshape(d.shape[0], -1).sum(1) / cnt) ** 2).mean().item()
    return st


def ulp_checks(got: dict, eager: dict, ref: dict, where: str) -> None:
    """Raise AssertionError when a bf16/fp16 output is rounded another way than eager (truncation,
    floor: a mean error towards zero / downwards of up to half an ulp), carries a bias, or has an error
    common to each row that eager does not have (a per-row factor rounded before it is applied)."""
    for name in sorted(eager):
        a, e = got[name], eager[name]
        if a.dtype not in MANTISSA_BITS:
            continue
        sa, se = _ulp_stats(a, ref[name]), _ulp_stats(e, ref[name])
        if sa is None or se is None:
            continue
        for stat, what in (("signed", "mean signed error"), ("toward_zero", "mean error towards zero")):
            diff = sa[stat] - se[stat]
            spread = math.sqrt(sa[stat + "_var"] / sa["n"] + se[stat + "_var"] / se["n"])
            if abs(diff) > max(BIAS_ULP, BIAS_SIGMAS * spread):
                raise AssertionError(
                    f"{name} at {where}: {what} vs fp64 {sa[stat]:+.3f} ulp, eager's {se[stat]:+.3f} ulp "
                    f"(difference {diff:+.3f} > max({BIAS_ULP}, {BIAS_SIGMAS:.0f} x {spread:.3f})): a rounding-mode "
                    f"or bias bug in the {a.dtype} output")
        for stat in ("row_common", "row_common_relative"):
            if stat in sa and stat in se and sa[stat] > ROW_RATIO * se[stat] + ROW_FLOOR_ULP ** 2:
                raise AssertionError(
                    f"{name} at {where}: error common to a row ({'signed' if stat == 'row_common' else 'towards zero'}), "
                    f"mean square of the rows' mean {sa[stat]:.4f} ulp^2 against eager's {se[stat]:.4f} "
                    f"(> {ROW_RATIO:.0f}x + {ROW_FLOOR_ULP ** 2:.2f}): a per-row term or factor rounded before it "
                    f"is applied to the row")


# ------------------------------------------------------------------------------------------------
# judging one run's outputs (both targets)


def judge_outputs(program, got: dict, inputs: dict, scalars: dict, where: str, case: dict, dtype: str, *,
                  tf32: bool = False, interpreted: bool = False) -> None:
    """Raise AssertionError unless `got` (a run on `inputs`) matches the references (see module doc)."""
    bound = bind_sizes(program, inputs, scalars)
    windows = _windows(program, bound, case["seed"])

    def eager_of(ins: dict, ref: dict) -> dict:
        """The eager baseline: the program's chain in its own dtypes; with TF32 contractions (the rule
        in the module doc), per output the TF32 rounding whose result is farther from fp64."""
        if not tf32:
            return harness.reference_eager(program, ins, scalars, truncate_bf16=interpreted)
        runs = [harness.reference_eager(program, ins, scalars, tf32=r, truncate_bf16=interpreted)
                for r in harness.TF32_ROUNDINGS]

        def err(out: dict, name: str) -> float:
            a, r = out[name], ref[name]
            if not a.is_floating_point():
                return 0.0
            # a non-finite baseline is never chosen over a finite one: it would switch off the
            # "fused non-finite where eager is finite" (poison) check
            return (a.double() - r.double()).pow(2).mean().sqrt().nan_to_num(nan=-1.0, posinf=-1.0).item()
        return {n: max(runs, key=lambda o: err(o, n))[n] for n in runs[0]}

    def compare(out: dict, ins: dict, at: str) -> None:
        ref = harness.reference_fp64(program, ins, scalars)
        eager = eager_of(ins, ref)
        names = sorted(eager)
        missing = [n for n in names if n not in out]
        if missing:
            raise AssertionError(f"candidate returned no {missing}")
        assert_close_to_reference(tuple(out[n] for n in names), tuple(eager[n] for n in names),
                                  tuple(ref[n] for n in names), tol=_tol(dtype),
                                  name=f"{program.name} outputs {names} at {at} case {case}"
                                  + (" (eager: TF32 products)" if tf32 else ""))
        if not tf32:
            ulp_checks(out, eager, ref, at)

    if windows is None:
        compare(got, inputs, where)
        return
    # windowed references: every element must still have been written (inputs are finite, the
    # poison is NaN), and each window must match its own references
    unwritten = [n for n, v in got.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if unwritten:
        raise AssertionError(f"at {where}: fused result has non-finite values where eager "
                             f"has none (outputs {unwritten}: elements never written)")
    for lo, hi in windows:
        w = harness.row_window_inputs(program, inputs, bound, lo, hi)
        compare({n: v[lo:hi] for n, v in got.items()}, w, f"{where} rows [{lo}, {hi})")


# ------------------------------------------------------------------------------------------------
# Ascend: every launch in a sandboxed worker, judged here

COUNTED = ("mte2_bytes", "mte2_transfers", "mte3_bytes", "mte3_transfers", "scalar_ops", "vector_repeats",
           "vector_calls")


@dataclass
class _Problem:
    sizes: dict
    cores: int
    check_sync: bool
    case: dict
    role: str                # searched | bucket | profile

    @property
    def where(self) -> str:
        return (f"ROWS={self.sizes['ROWS']} on {self.cores} core{'s' if self.cores > 1 else ''} ({self.role}, "
                f"sync checks {'on' if self.check_sync else 'off'})")


def plan_bytes(model, program, config: dict, named_sizes: dict, cores: int) -> dict:
    """MTE2/MTE3 bytes the program moves at this tiling and core count, from the cost model's transfer
    plan of the program (trex.codegen_ascendc.counting): a count the kernel cannot touch."""
    from trex.cost_models.ascend_model import Tiling
    pred = model.evaluate(harness.symbol_sizes(named_sizes),
                          Tiling(int(config["rows_per_tile"]), config.get("col_chunk"), int(config["buffer_depth"]),
                                 int(cores)))
    return {"mte2_bytes": int(pred.mte2_bytes), "mte3_bytes": int(pred.mte3_bytes)}


def _reject(reason: str, **kw) -> dict:
    return {"ok": False, "reason": reason[-2000:], **kw}


def check_ascend(req: dict, *, profile_rows: tuple = (), rng: random.Random | None = None) -> dict:
    """Verify an Ascend candidate (and run its profile's launches) without loading it here. Returns the
    verdict, what was checked, and the profile launches' counters keyed by row count."""
    from trex.codegen_ascendc.counting import ascend_cost_model
    from trex.cost_models.hardware import ascend_target

    from . import sandbox
    program = harness.build_program(req["pattern"], req["dtype"], index=int(req.get("program_index", 0)))
    kernel, sizes0, scalars = req["kernel"], dict(req["sizes"]), dict(req["scalars"])
    config, checks = kernel["config"], int(req.get("checks", 3))
    try:
        binary = sandbox.build(kernel["source"], req.get("opt", "-O0"))
    except Exception as e:  # noqa: BLE001 - a source that does not build is rejected with the compiler's words
        return _reject(f"build: {type(e).__name__}: {e}", checks=0)
    if kernel.get("sha256") and kernel["sha256"] != binary.sha256:
        return _reject(f"the library built from the candidate's source ({binary.sha256[:16]}...) is not the one "
                       f"that was compiled and profiled ({kernel['sha256'][:16]}...)", checks=0)
    model = ascend_cost_model(program, ascend_target(req["target"]))
    others, n_others = bucket_row_counts(program, sizes0, rng)
    cores = int(config["cores"])
    problems: list[_Problem] = []
    for c in range(checks):
        case = draw_case(rng)
        problems += [_Problem(sizes0, cores, True, case, "searched"), _Problem(sizes0, cores, False, case, "searched")]
        problems += [_Problem(dict(sizes0, ROWS=r), cores, True, case, "bucket") for r in others[c::checks]]
        for r in profile_rows:
            problems += [_Problem(dict(sizes0, ROWS=int(r)), 1, s, case, "profile") for s in (True, False)]
    inputs, outs, launches = [], [], []
    for p in problems:
        ins = harness.make_inputs(program, p.sizes, p.case["seed"], p.case["scale"], p.case["distribution"])
        args, o = harness.ascend_launch_args(program, config, ins, scalars, cores=p.cores)
        inputs.append(ins)
        outs.append(o)
        launches.append(sandbox.Launch([harness.tensor_bytes(a) if torch.is_tensor(a) else bytes(a) for a in args],
                                       p.cores, p.check_sync))
    try:
        results = sandbox.run(binary, program.name, launches, timeout_s=float(req.get("timeout_s", 300.0)))
    except sandbox.SandboxError as e:
        return _reject(str(e), checks=0)
    checked_rows = sorted({int(p.sizes["ROWS"]) for p in problems if p.role != "profile"})
    info = {"checks": checks, "rows_checked": checked_rows, "bucket": bucket_rows(program, sizes0),
            "p_miss_one_bad_row_count": miss_probability(len(others), n_others),
            "sandbox": "bwrap" if sandbox.bwrap() else "process", "library_sha256": binary.sha256}
    by_problem: dict = {}
    outputs_of: dict = {}
    profile_counters: dict = {}
    for p, ins, o, res in zip(problems, inputs, outs, results):
        if "error" in res:
            return _reject(f"at {p.where}: {res['error']}", **info)
        # the buffers as the worker left them: inputs must be unchanged, outputs judged
        names = [t.name for t in program.tensors]
        for name, buf in zip(names, res["buffers"]):
            t = ins[name] if name in ins else o[name]
            back = harness.tensor_from_bytes(buf, t)
            if name in ins:
                if not torch.equal(back, ins[name].contiguous()):
                    return _reject(f"at {p.where}: the kernel wrote into its inputs {[name]}", **info)
            else:
                o[name] = back
        got = harness.finalize_ascend(program, o, ins, bind_sizes(program, ins, scalars))
        key = (int(p.sizes["ROWS"]), p.cores)
        pair = (key, p.case["seed"])
        if pair in outputs_of:
            # the same launch on the same inputs, the sync checks switched: the outputs must be identical
            # (bit for bit: a kernel is deterministic), and then they were judged already
            prev = outputs_of[pair]
            if any(not torch.equal(prev[n].nan_to_num(0.0), got[n].nan_to_num(0.0)) for n in got):
                return _reject(f"at {p.where}: the outputs differ from the same launch on the same inputs with the "
                               f"sync checks {'off' if p.check_sync else 'on'}: the kernel behaves differently "
                               f"when it is watched", **info)
        else:
            try:
                judge_outputs(program, got, ins, scalars, p.where, p.case, req["dtype"])
            except AssertionError as e:
                return _reject(str(e), **info)
            outputs_of[pair] = got
        counters = res["counters"]
        planned = plan_bytes(model, program, config, p.sizes, p.cores)
        for k in ("mte2_bytes", "mte3_bytes"):
            if counters[k] < planned[k]:
                return _reject(f"at {p.where}: the kernel's counted {k.replace('_', ' ')} ({counters[k]}) are fewer "
                               f"than its program moves at this tiling ({planned[k]}, the transfer plan's count): "
                               f"counters erased or transfers the emulator did not count (raw pointer copies)",
                               **info)
        mine = {k: counters[k] for k in COUNTED}
        first = by_problem.setdefault(key, (mine, p))
        if first[0] != mine:
            diff = sorted(k for k in COUNTED if first[0][k] != mine[k])
            return _reject(f"at ROWS={key[0]} on {key[1]} core(s): the counters of two runs of the same launch differ "
                           f"in {diff} ({first[1].where} / {p.where}, other inputs or sync checks): the kernel "
                           f"behaves differently when it is watched", **info)
        if p.role == "profile":
            profile_counters.setdefault(int(p.sizes["ROWS"]), {**counters, "plan": planned})
    return {"ok": True, **info, "counters": {str(k): v for k, v in profile_counters.items()}}


def _run_candidate(req: dict, program, inputs: dict, scalars: dict) -> dict:
    """The candidate's outputs for `inputs` (on the device `_device` chose; outputs there too)."""
    target = req["target"]
    kernel = req["kernel"]
    if target == "cuda":
        from trex.codegen_triton.launcher import run_program
        from trex.codegen_triton.printer import Tiling

        from .cuda import install_source
        install_source(program, req["sizes"], kernel["config"], kernel["source"])
        os.environ["TREX_TRITON_POISON"] = "1"     # the launcher NaN-fills every output before the launch
        # per-stream outputs in the layout the target's runner passes (row-strided views of one tensor)
        out = run_program(program, inputs, scalars, tiling=Tiling(**kernel["config"]),
                          out=harness.output_views(program, inputs))
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return out
    raise ValueError(f"verifier: unknown target {target!r}")


def check(req: dict) -> dict:
    """Verify one candidate. Ascend: check_ascend (the kernel runs in sandboxed workers). CUDA: runs in
    the verifier process (the candidate's Triton source is installed in the launcher's cache)."""
    if req["target"].startswith("ascend"):
        return check_ascend(req)
    # `layout`: another of the spec's layouts for this target (mHC's cuda_split), as the backend built it
    program = harness.build_program(req["pattern"], req["dtype"], req.get("layout") or req["target"], req["sizes"])
    scalars = dict(req["scalars"])
    tf32 = harness.tensor_core_contractions(program, req["target"])
    # Triton's interpreter truncates fp32 -> bf16 casts: the eager baseline then does too (harness)
    interpreted = req["target"] == "cuda" and _device(req) == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"
    checks = int(req.get("checks", 3))
    others, _ = bucket_row_counts(program, req["sizes"])
    done = 0

    def one(sizes: dict, case: dict) -> None:
        inputs = harness.make_inputs(program, sizes, case["seed"], case["scale"], case["distribution"],
                                     device=_device(req))
        pristine = {k: v.clone() for k, v in inputs.items()}
        try:
            got = _run_candidate(req, program, inputs, scalars)
        except Exception as e:      # re-raised with the shape that crashed
            raise RuntimeError(f"at ROWS={sizes['ROWS']}: {type(e).__name__}: {e}") from e
        clobbered = [k for k in inputs if not torch.equal(inputs[k], pristine[k])]
        if clobbered:
            raise AssertionError(f"at ROWS={sizes['ROWS']}: the kernel wrote into its inputs {clobbered}")
        judge_outputs(program, got, pristine, scalars, f"ROWS={sizes['ROWS']}", case, req["dtype"], tf32=tf32,
                      interpreted=interpreted)

    try:
        for c in range(checks):
            case = draw_case()
            # every check runs the searched shape, and other row counts of the bucket the store will
            # answer for (so a stored configuration is verified where it will be used)
            one(req["sizes"], case)
            for r in others[c::checks][:1]:
                one(dict(req["sizes"], ROWS=r), case)
            done += 1
        return {"ok": True, "checks": done}
    except AssertionError as e:
        return {"ok": False, "checks": done, "reason": str(e)[-2000:]}
    except Exception as e:  # noqa: BLE001 - a crashing candidate is a rejected candidate, with its reason
        return {"ok": False, "checks": done, "reason": f"{type(e).__name__}: {e}"[-2000:],
                "traceback": traceback.format_exc()[-4000:]}


# A CUDA error of this kind leaves the process's CUDA context unusable: every later check would fail
# for the earlier candidate's fault, so the process answers and exits, and the next request starts a new one.
STICKY_CUDA_ERRORS = ("illegal memory access", "misaligned address", "unspecified launch failure",
                      "device-side assert", "CUDA error: an illegal instruction")
FRAME = "TREX-VERDICT"


def serve(stdin=sys.stdin, stdout=sys.stdout) -> None:
    """The CUDA verifier process: one JSON request per line; each answer is one frame line
    `TREX-VERDICT <the request's nonce> <json>` (other lines on stdout, a candidate's prints, are skipped)."""
    for line in stdin:
        if not line.strip():
            continue
        nonce = ""
        try:
            req = json.loads(line)
            nonce = str(req.pop("nonce", ""))
            ans = check(req)
        except Exception as e:  # noqa: BLE001 - a malformed request gets an answer, not a dead process
            ans = {"ok": False, "checks": 0, "reason": f"verifier: {type(e).__name__}: {e}"}
        if torch.cuda.is_available():
            # the searching process profiles on the same GPU: give back what this check cached
            torch.cuda.empty_cache()
        restart = not ans.get("ok") and any(k in ans.get("reason", "") for k in STICKY_CUDA_ERRORS)
        if restart:
            ans["restart"] = True
        stdout.write(f"\n{FRAME} {nonce} {json.dumps(ans)}\n")
        stdout.flush()
        if restart:
            return


# the verifier process's command: isolated mode (no working directory, no $PYTHONPATH on sys.path),
# importing the trex package this process imported, by its absolute location
SERVE = ("import sys; sys.path.insert(0, {root!r}); from trex.tuning.verify import serve; serve()")


class Verifier:
    """Verifies candidates. Ascend requests are judged in this process (their kernels run in sandboxed
    workers, trex.tuning.sandbox); CUDA requests go to one verifier process per search (started lazily,
    so an answer from the store starts nothing)."""

    def __init__(self, timeout_s: float = 300.0):
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None
        self._stderr = None
        self.requests = 0

    def start(self) -> None:
        """Start the process now (it is otherwise started by the first request): a caller that knows it
        will verify overlaps the process's imports and device set-up with its own work."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()

    def _start(self) -> None:
        from .sandbox import PACKAGE_ROOT
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LD_"))}
        env.setdefault("OMP_NUM_THREADS", "2")
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; read back when it dies
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", SERVE.format(root=str(PACKAGE_ROOT))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     env=env)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-1500:]

    def verify(self, request: dict) -> dict:
        self.requests += 1
        if request["target"].startswith("ascend"):
            try:
                return check_ascend(request)
            except Exception as e:  # noqa: BLE001 - a candidate that breaks the judge is rejected, with the reason
                return {"ok": False, "checks": 0, "reason": f"verifier: {type(e).__name__}: {e}"[-2000:],
                        "traceback": traceback.format_exc()[-4000:]}
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        nonce = secrets.token_hex(16)
        try:
            self.proc.stdin.write(json.dumps({**request, "nonce": nonce}) + "\n")
            self.proc.stdin.flush()
            line = _read_frame(self.proc, self.timeout_s, f"{FRAME} {nonce} ")
        except (BrokenPipeError, TimeoutError) as e:
            self.close()
            return {"ok": False, "checks": 0, "reason": f"verifier process failed: {type(e).__name__}: {e}"}
        if line is None:
            code = self.proc.wait(timeout=30)
            tail = self._stderr_tail()
            self.close()
            return {"ok": False, "checks": 0, "reason": f"verifier process died (exit {code}): {tail}"}
        try:
            ans = json.loads(line)
        except json.JSONDecodeError:
            return {"ok": False, "checks": 0, "reason": f"unreadable verifier answer {line[:200]!r}"}
        if ans.get("restart"):      # the process exits after a sticky CUDA error: the next request starts a new one
            self.close()
        return ans

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _read_frame(proc: subprocess.Popen, timeout_s: float, prefix: str) -> str | None:
    """The payload of the first stdout line starting with `prefix` (None at end of file); other lines
    (a candidate's prints) are skipped.

    Reads the pipe's bytes itself (os.read, lines split here, the rest kept on `proc` for the next frame):
    a buffered `readline()` after `select()` pulls the whole answer ("\n" + the frame, one write) into
    Python's buffer while returning only the blank line, and the next `select()` then waits on an empty
    pipe until the timeout (every CUDA verification timed out where Triton runs on the CPU)."""
    import select
    import time
    deadline = time.monotonic() + timeout_s
    fd = proc.stdout.fileno()
    buf = getattr(proc, "_trex_frame_buf", b"")
    try:
        while True:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith(prefix):
                    return text[len(prefix):]
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                proc.kill()
                raise TimeoutError(f"no answer within {timeout_s:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            buf += chunk
    finally:
        proc._trex_frame_buf = buf
