"""The verifier: a separate process the candidate generator cannot touch.

`Verifier` starts `python -m trex.tuning.verify --serve` once per search and sends it one JSON request per
candidate (one line on stdin: target, pattern, dtype, sizes, scalars, and the candidate's kernel: its
source and knob values); the process answers one JSON line. For each request it

  * draws fresh random inputs for every check from the hypothesis strategy `input_cases` (seed, scale,
    value distribution; hypothesis' own randomness, no example database, so nothing the generator
    saw or chose decides the inputs), and runs each check at the searched shape and at another ROWS of
    the store bucket the result will be used for (where ROWS is not tied to other sizes),
  * allocates the outputs and fills them with NaN before every run (a row the kernel skips stays NaN),
    runs the AscendC emulator with its pipe-synchronisation checks on and its GM bounds checks, and
    fails a kernel that writes into its inputs,
  * runs the candidate kernel, the program's reference interpreter in its own dtypes ("eager", fp32
    compute) and the same interpreter in fp64 ("reference") -- for a CUDA candidate on a GPU, inputs,
    kernel and both references all on the GPU (DeepSeek-V4 shapes verify in well under a second);
    a row-grouped program of many groups (RoPE at 16384 tokens x 128 heads) is compared on three row
    windows (first, last, drawn) after checking that every output element was written,
  * applies trex.compiler.testing.assert_close_to_reference (the DESIGN.md rule: allclose to eager, or
    rmse vs fp64 within 3x (16-bit) / 2x eager's).

TF32 rule (cuda): a program with a contraction (`matvec` / `matvec_t`; the `rows_matmul` host step is fp32-accurate)
runs it on the tensor cores in TF32 on cuda (issue 6 allows it, as DeepSeek's mHC kernels do), so its
"eager" baseline is the same chain with TF32 products: the reference interpreter with every matrix
product's fp32 operands rounded to TF32 (harness.tf32_products), once rounding to nearest and once
truncating (the kernel's operand conversion is the compiler's choice), and per output the one farther
from fp64 is the baseline. The fp64 reference stays exact. A kernel that computes its dots more
precisely (fp32 under Triton's interpreter, dot_bf16_split) only does better against it. The same
rule as tests/gpu/test_fuzz_cuda.py (there: allow_tf32 for the mHC chain), emulated here so it does
not depend on cuBLAS's operand rounding and runs identically on the CPU.

Interpreter rule: a CUDA candidate verified under Triton's interpreter (TRITON_INTERPRET=1, no GPU)
has its fp32 -> bf16 casts truncated by the interpreter (Triton 3.6; the GPU rounds to nearest even),
so its eager baseline truncates the same casts (harness.truncating_bf16_casts).

`input_cases` (the verifier's inputs at the searched shape) lives here; trex.compiler.testing's
hypothesis strategies draw odd shapes for the fuzz suite instead. A crash, a timeout or an
unreadable answer of the process counts as a rejection.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import traceback

import sympy
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from trex.compiler.kernel_ir import bind_sizes
from trex.compiler.testing import assert_close_to_reference

from . import harness

SCALES = (1.0, 1e-3, 8.0)


def input_cases(bucket_rows: tuple[int, int] | None = None):
    """Hypothesis strategy of input cases: a 63-bit seed, a magnitude, a value distribution, and (when
    the program's row count can vary on its own) a second ROWS from the store bucket [lo, hi]."""
    fields = {
        "seed": st.integers(min_value=0, max_value=2 ** 63 - 1),
        "scale": st.sampled_from(SCALES),
        "distribution": st.sampled_from(sorted(harness.DISTRIBUTIONS)),
    }
    if bucket_rows is not None:
        fields["bucket_rows"] = st.integers(*bucket_rows)
    return st.fixed_dictionaries(fields)


def bucket_rows(program, named_sizes: dict) -> tuple[int, int] | None:
    """The ROWS range a stored configuration will be used for (the store's bucket: up to the next power of
    two), or None when ROWS is tied to other sizes (row-mapped inputs, row groups: RoPE's tables)."""
    if any(not t.row_map.is_identity for t in program.tensors) or getattr(program, "row_group", None) is not None:
        return None
    rows = int(named_sizes["ROWS"])
    hi = 1 if rows <= 1 else 1 << (rows - 1).bit_length()
    return (hi // 2 + 1, hi) if hi > 1 else None


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


def _run_candidate(req: dict, program, inputs: dict, scalars: dict) -> dict:
    """The candidate's outputs for `inputs` (on the device `_device` chose; outputs there too)."""
    target = req["target"]
    kernel = req["kernel"]
    if target.startswith("ascend"):
        out, _ = harness.run_ascend(program, kernel["source"], kernel["config"], inputs, scalars,
                                    opt=req.get("opt", "-O0"), poison=True, check_sync=True)
        return out
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
    """Verify one candidate (runs inside the verifier process)."""
    program = harness.build_program(req["pattern"], req["dtype"], req["target"], req["sizes"])
    scalars = dict(req["scalars"])
    tf32 = harness.tensor_core_contractions(program, req["target"])
    # Triton's interpreter truncates fp32 -> bf16 casts: the eager baseline then does too (harness)
    interpreted = req["target"] == "cuda" and _device(req) == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"
    checks = int(req.get("checks", 3))
    seen: list = []

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
        inputs = pristine
        bound = bind_sizes(program, inputs, scalars)
        windows = _windows(program, bound, case["seed"])
        if windows is None:
            ref = harness.reference_fp64(program, inputs, scalars)
            eager = _eager(inputs, ref)
            _compare(got, eager, ref, f"ROWS={sizes['ROWS']}", case)
            return
        # windowed references: every element must still have been written (inputs are finite, the
        # poison is NaN), and each window must match its own references
        unwritten = [n for n, v in got.items() if v.is_floating_point() and not torch.isfinite(v).all()]
        if unwritten:
            raise AssertionError(f"at ROWS={sizes['ROWS']}: fused result has non-finite values where eager "
                                 f"has none (outputs {unwritten}: elements never written)")
        for lo, hi in windows:
            w = harness.row_window_inputs(program, inputs, bound, lo, hi)
            ref = harness.reference_fp64(program, w, scalars)
            eager = _eager(w, ref)
            _compare({n: v[lo:hi] for n, v in got.items()}, eager, ref,
                     f"ROWS={sizes['ROWS']} rows [{lo}, {hi})", case)

    def _eager(inputs: dict, ref: dict) -> dict:
        """The eager baseline: the program's chain in its own dtypes; with TF32 contractions (the rule
        in the module doc), per output the TF32 rounding whose result is farther from fp64."""
        if not tf32:
            return harness.reference_eager(program, inputs, scalars, truncate_bf16=interpreted)
        runs = [harness.reference_eager(program, inputs, scalars, tf32=r, truncate_bf16=interpreted)
                for r in harness.TF32_ROUNDINGS]

        def err(out: dict, name: str) -> float:
            a, r = out[name], ref[name]
            if not a.is_floating_point():
                return 0.0
            # a non-finite baseline is never chosen over a finite one: it would switch off the
            # "fused non-finite where eager is finite" (poison) check
            return (a.double() - r.double()).pow(2).mean().sqrt().nan_to_num(nan=-1.0, posinf=-1.0).item()
        return {n: max(runs, key=lambda o: err(o, n))[n] for n in runs[0]}

    def _compare(got: dict, eager: dict, ref: dict, where: str, case: dict) -> None:
        names = sorted(eager)
        missing = [n for n in names if n not in got]
        if missing:
            raise AssertionError(f"candidate returned no {missing}")
        assert_close_to_reference(tuple(got[n] for n in names), tuple(eager[n] for n in names),
                                  tuple(ref[n] for n in names), tol=_tol(req["dtype"]),
                                  name=f"{program.name} outputs {names} at {where} case {case}"
                                  + (" (eager: TF32 products)" if tf32 else ""))

    @settings(max_examples=checks, database=None, deadline=None, derandomize=False,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=input_cases(bucket_rows(program, req["sizes"])))
    def prop(case):
        seen.append(case)
        # every check runs the searched shape, and another row count of the bucket the store will
        # answer for (so a stored configuration is verified where it will be used)
        one(req["sizes"], case)
        if "bucket_rows" in case and case["bucket_rows"] != req["sizes"]["ROWS"]:
            one(dict(req["sizes"], ROWS=case["bucket_rows"]), case)

    try:
        prop()
        return {"ok": True, "checks": len(seen)}
    except AssertionError as e:
        return {"ok": False, "checks": len(seen), "reason": str(e)[-2000:]}
    except Exception as e:  # noqa: BLE001 - a crashing candidate is a rejected candidate, with its reason
        return {"ok": False, "checks": len(seen), "reason": f"{type(e).__name__}: {e}"[-2000:],
                "traceback": traceback.format_exc()[-4000:]}


# A CUDA error of this kind leaves the process's CUDA context unusable: every later check would fail
# for the earlier candidate's fault, so the process answers and exits, and the next request starts a new one.
STICKY_CUDA_ERRORS = ("illegal memory access", "misaligned address", "unspecified launch failure",
                      "device-side assert", "CUDA error: an illegal instruction")


def serve(stdin=sys.stdin, stdout=sys.stdout) -> None:
    for line in stdin:
        if not line.strip():
            continue
        try:
            ans = check(json.loads(line))
        except Exception as e:  # noqa: BLE001 - a malformed request gets an answer, not a dead process
            ans = {"ok": False, "checks": 0, "reason": f"verifier: {type(e).__name__}: {e}"}
        if torch.cuda.is_available():
            # the searching process profiles on the same GPU: give back what this check cached
            torch.cuda.empty_cache()
        restart = not ans.get("ok") and any(k in ans.get("reason", "") for k in STICKY_CUDA_ERRORS)
        if restart:
            ans["restart"] = True
        stdout.write(json.dumps(ans) + "\n")
        stdout.flush()
        if restart:
            return


class Verifier:
    """The verifier process of one search (started lazily, so an answer from the store starts nothing)."""

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
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "2")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; read back when it dies
        self.proc = subprocess.Popen([sys.executable, "-m", "trex.tuning.verify", "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-1500:]

    def verify(self, request: dict) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.requests += 1
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = _readline(self.proc, self.timeout_s)
        except (BrokenPipeError, TimeoutError) as e:
            self.close()
            return {"ok": False, "checks": 0, "reason": f"verifier process failed: {type(e).__name__}: {e}"}
        if not line:
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


def _readline(proc: subprocess.Popen, timeout_s: float) -> str:
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout_s):
            proc.kill()
            raise TimeoutError(f"no answer within {timeout_s:.0f} s")
        return proc.stdout.readline()
    finally:
        sel.close()


if __name__ == "__main__":
    if "--serve" in sys.argv[1:]:
        serve()
    else:
        sys.stdout.write(json.dumps(check(json.loads(sys.stdin.read()))) + "\n")
