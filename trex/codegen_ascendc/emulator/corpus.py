"""Measure the emulator on public AscendC kernels written by others, compiled and run unchanged.

    python -m trex.codegen_ascendc.emulator.corpus_manifest --root DIR [--only ID ...] [--json OUT.json] [--markdown]

DIR holds the source repositories, one directory per entry of `SOURCES` named `<owner>+<name>`
(e.g. `git clone https://github.com/<owner>/<name> DIR/<owner>+<name> && git -C ... checkout <commit>`).
Third-party code is never committed to trex; only the manifest (corpus_manifest.py, which imports
this harness and is the command) is.

Each entry of `CORPUS` names a kernel (`op_kernel/<op>.cpp` of an op project, whose `op_host/` tiling
code runs as well: emulator/op_project.py) and the cases it runs: input tensors, poisoned outputs
(NaN / 0x5A bytes, so an element the kernel never writes fails), attributes, and a torch reference.
The op's own tiling function picks the block count and tiling key for every case; the cases vary
dtypes and shapes so that several block counts and tiling keys run. The table says per kernel:
`pass` (every case within tolerance), `wrong` (max error), `run error` (the emulator's message),
`compile` (the first blocker, from g++'s first error) or `excluded` (broken as published; reason).
"""
from __future__ import annotations

import inspect
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

# Source repositories: directory name under --root -> (GitHub repository, commit measured).
SOURCES: dict[str, tuple[str, str]] = {
    "hansheng1001+AscendCContest": ("hansheng1001/AscendCContest", "4904517a3365ea5c441ca5832ed1562939411e47"),
    "KiaraStark+ascendc-homework": ("KiaraStark/ascendc-homework", "1ffb17c666b2ff44e027c2d8e16fe460807a9dfb"),
    "linnlh+ascendc-competition-s3": ("linnlh/ascendc-competition-s3", "04c0c97dc5623053fefc585786697a8c19b9504a"),
    "Youshikawa+ascendC-S2": ("Youshikawa/ascendC-S2", "61e00967069e91edbb6188bec76086d46369cbab"),
    "A-Y-1+AscendC-S4": ("A-Y-1/AscendC-S4", "fb57a6fb6eaf4d39b5c5988bd9b29709670872c4"),
    "JeffDing+AscendC_Code": ("JeffDing/AscendC_Code", "7fee495a931889a9f81fdc90462525c18e0fbdcf"),
    "xsh20021105+AscendC-S3": ("xsh20021105/AscendC-S3", "b863fdcb2fd9fa30ec90a185de20c13d43fc457c"),
    "mirror-cann+asc-devkit": ("mirror-cann/asc-devkit", "82b89a15f26329511fc7fbc807d5132a1f9b4ba7"),
    # a GitHub copy of Ascend's gitee cann-ops (the CANN community op repository: op projects with msopst tests)
    "Hayden727+cann-ops": ("Hayden727/cann-ops", "eef0ff770ece1497e98bbf063028465a20417dfe"),
}


@dataclass
class Case:
    inputs: list[Any]
    outputs: list[torch.Tensor]          # poisoned; the kernel writes them
    expected: list[torch.Tensor | None]  # per output; None: not compared
    attrs: dict = field(default_factory=dict)
    atol: "float | torch.Tensor" = 1e-3  # a tensor: per element (broadcast against the output)
    rtol: float = 1e-3
    compare: list[int] | None = None     # indices into inputs to compare too (in-place ops), with expected_inputs
    expected_inputs: list[torch.Tensor] = field(default_factory=list)


@dataclass
class Entry:
    id: str
    source: str                # key of SOURCES
    path: str                  # kernel file inside the repository
    cases: "Callable[[], list[Case]] | ProjectCases | None" = None
    style: str = "framework"   # framework: op_kernel + op_host (tiling function, DTYPE_*, tiling keys)
    excluded: str | None = None  # why the kernel cannot run anywhere as published
    cores: int | None = None   # AIV cores its host tiling must see (a kernel written for one chip's count), else --cores


def poison(shape, dtype) -> torch.Tensor:
    """An output the kernel must overwrite: NaN for floats, True for bool, 0x5A for integers."""
    if dtype.is_floating_point or dtype.is_complex:  # complex: both parts NaN
        return torch.full(shape, complex(math.nan, math.nan) if dtype.is_complex else math.nan, dtype=dtype)
    return torch.full(shape, True if dtype == torch.bool else 0x5A, dtype=dtype)


def _gen(shape, dtype, lo=-2.0, hi=2.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g) * (hi - lo) + lo).to(dtype)
    return torch.randint(int(lo), int(hi) + 1, shape, generator=g).to(dtype)


TOL = {torch.float16: (2e-3, 2e-3), torch.float32: (1e-5, 1e-5), torch.bfloat16: (1e-2, 1e-2),
       torch.complex64: (1e-5, 1e-5), torch.float64: (1e-12, 1e-12)}  # complex64: two float32 parts


def elementwise(fn: Callable, n_in: int, dtypes=(torch.float16, torch.float32), shapes=((64, 2048), (3, 333)),
                lo=-2.0, hi=2.0, out_dtype=None, attrs=None, tol_scale=1.0, ref_dtype=torch.float32,
                input_dtypes=None) -> Callable[[], list[Case]]:
    """Cases for an op y = fn(x1, ..., xn) over same-shape inputs, per dtype and shape."""
    def build() -> list[Case]:
        cases = []
        for dt in dtypes:
            for si, shape in enumerate(shapes):
                ins = [_gen(shape, (input_dtypes or {}).get(k, dt), lo, hi, seed=7 * si + k) for k in range(n_in)]
                ref = fn(*[x.to(ref_dtype) if x.dtype.is_floating_point else x for x in ins], **(attrs or {}))
                odt = out_dtype or dt
                atol, rtol = TOL.get(dt, (1e-5, 1e-5))
                cases.append(Case(ins, [poison(ref.shape, odt)], [ref.to(odt)], dict(attrs or {}),
                                  atol * tol_scale, rtol * tol_scale))
        return cases
    return build


# msopst type names (the tests/st/*.json of CANN op projects) -> torch dtypes
ST_DTYPES = {"float16": torch.float16, "float": torch.float32, "float32": torch.float32, "bfloat16": torch.bfloat16,
             "double": torch.float64, "float64": torch.float64, "int8": torch.int8, "uint8": torch.uint8,
             "int16": torch.int16, "int32": torch.int32, "int64": torch.int64, "uint32": torch.uint32,
             "bool": torch.bool, "complex64": torch.complex64}


def _st_tensor(shape, dtype, value_range, seed) -> torch.Tensor:
    """An input as msopst draws it: uniform in value_range (integers: randint over the range, bool: a coin)."""
    lo, hi = value_range
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if dtype.is_complex:  # real and imaginary parts each uniform in value_range
        return torch.complex(*(torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
                               for _ in range(2))).to(dtype)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    return torch.randint(math.ceil(lo), math.floor(hi) + 1, shape, generator=g).to(dtype)


def _ref_view(t: torch.Tensor) -> torch.Tensor:
    """What a reference computes on: float inputs in float32, integers in int64, bool and complex as they are."""
    if t.dtype.is_floating_point:
        return t.float()
    return t if t.dtype == torch.bool or t.dtype.is_complex else t.long()


@dataclass
class ProjectCases:
    """Cases from the op project's own tests: every case of its msopst files (tests/st/*.json: shapes, dtypes
    per variant, value ranges, attributes), plus `specs` in the same form (the shapes of its examples/
    gen_data.py, for ops without st files or to reach more blocks). `reference(*inputs, **attrs)` returns
    the output(s) in float32/int64; an output named like an input is that input updated in place."""
    reference: Callable
    specs: list[dict] = field(default_factory=list)
    tol_scale: float = 1.0
    reduction: bool = False      # outputs are sums over many terms: half gets HALF_REDUCTION_RTOL
    st_files: bool = True

    def __call__(self, project_dir: Path) -> list[Case]:
        specs = []
        if self.st_files:
            for f in sorted((project_dir / "tests" / "st").glob("*.json")):
                specs += json.loads(f.read_text())
        cases = []
        for ci, spec in enumerate(specs + self.specs):
            for variant in range(_variants(spec)):
                case = self._case(spec, variant, seed=100 * ci + variant)
                if case is not None:
                    cases.append(case)
        return cases

    def _case(self, spec: dict, variant: int, seed: int) -> Case | None:
        def pick(v):
            return v[variant] if isinstance(v, list) else v
        ins, names = [], []
        for k, d in enumerate(spec["input_desc"]):
            if not isinstance(d.get("shape"), list) or pick(d["type"]) not in ST_DTYPES:
                return None  # fuzz shapes / UNDEFINED inputs: msopst generates them, not a fixed case
            dtype = ST_DTYPES[pick(d["type"])]
            vr = d.get("value_range") or [[-2.0, 2.0]]
            vr = vr if isinstance(vr[0], list) else [vr]
            ins.append(torch.tensor(d["value"], dtype=dtype).reshape(d["shape"]) if "value" in d
                       else _st_tensor(d["shape"], dtype, vr[min(variant, len(vr) - 1)], seed + k))
            names.append(d["name"])
        # msopst files name attributes in camelCase or snake_case; OpDefs in snake_case (Cast: dstType / dst_type)
        attrs = {re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", a["name"]).lower(): a["value"] for a in spec.get("attr", [])}
        kwargs = dict(attrs)
        outs_desc = spec["output_desc"]
        if _takes(self.reference, "out_shape"):
            kwargs["out_shape"] = outs_desc[0]["shape"]
        refs = self.reference(*[_ref_view(x) for x in ins], **kwargs)
        refs = list(refs) if isinstance(refs, (tuple, list)) else [refs]
        outputs, expected, compare, expected_inputs = [], [], [], []
        worst = None
        for d, ref in zip(outs_desc, refs):
            odt = ST_DTYPES[pick(d["type"])]
            ref = ref.reshape(d["shape"]).to(odt)
            worst = odt if (odt.is_floating_point or odt.is_complex) and (worst is None or TOL[odt][0] > TOL[worst][0]) else worst
            if d["name"] in names:  # in place: the OpDef output is the input tensor
                compare.append(names.index(d["name"]))
                expected_inputs.append(ref)
            else:
                outputs.append(poison(d["shape"], odt))
                expected.append(ref)
        atol, rtol = TOL[worst] if worst is not None else (0.0, 0.0)
        if self.reduction and worst == torch.float16:
            rtol = HALF_REDUCTION_RTOL
        return Case(ins, outputs, expected, attrs, atol * self.tol_scale, rtol * self.tol_scale,
                    compare or None, expected_inputs)


def _takes(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except ValueError:  # a builtin (torch.add): no introspectable signature
        return False


def _variants(spec: dict) -> int:
    return max([len(d["type"]) if isinstance(d["type"], list) else 1 for d in spec["input_desc"] + spec["output_desc"]])


# A half reduction of ~16K terms with half partials is ~1e-2 relative off the float result.
HALF_REDUCTION_RTOL = 3e-2


def _close(out: torch.Tensor, ref: torch.Tensor, atol: "float | torch.Tensor", rtol: float) -> tuple[bool, float]:
    if out.shape != ref.shape:
        return False, math.inf
    if out.dtype.is_complex:  # each part within tolerance
        return _close(torch.view_as_real(out), torch.view_as_real(ref.to(out.dtype)), atol, rtol)
    if not out.dtype.is_floating_point:
        bad = (out != ref).sum().item()
        return bad == 0, float(bad)
    o, r = out.double(), ref.double()
    both_nan = torch.isnan(o) & torch.isnan(r)
    err = torch.where(both_nan, torch.zeros_like(o), (o - r).abs())
    err = torch.nan_to_num(err, nan=math.inf)
    if isinstance(atol, torch.Tensor):
        atol = atol.double()
    ok = bool((err <= atol + rtol * r.abs().nan_to_num(0)).all())
    return ok, float(err.max()) if err.numel() else 0.0


@dataclass
class Result:
    id: str
    source: str
    path: str
    result: str        # pass / wrong / run error / compile / excluded / no cases
    detail: str = ""
    blocks: list[int] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)
    seconds: float = 0.0
    # bounds="device": what strict bounds would have refused ("<kind>: <where>" -> times, summed over cases)
    findings: dict[str, int] = field(default_factory=dict)
    bounds: str = "strict"
    style: str = "framework"   # the Entry's: framework / template (op projects) / program (.asc, asc_program.py)


_GE_TORCH = {0: torch.float32, 1: torch.float16, 2: torch.int8, 3: torch.int32, 4: torch.uint8, 6: torch.int16,
             9: torch.int64, 12: torch.bool, 27: torch.bfloat16}
_USES = re.compile(r"the kernel uses `(\w+)`")


def first_blocker(message: str) -> str:
    """The first problem of a compile failure: the missing name, else g++'s first error message."""
    host = "op_host: " if "op_host sources" in message.splitlines()[0] else ""
    m = _USES.search(message)
    if m:
        return f"{host}{m.group(1)} (unsupported/undeclared)"
    err = re.search(r"error: (.*)", message)
    return host + (err.group(1)[:160] if err else message.strip().splitlines()[0][:160])


# The CMake targets of a cann-ops op project (src/math/<op>/CMakeLists.txt) that build op_host code into the op
# package: tiling (optiling), shape inference (opsproto) and the OpDef registration (op_host_aclnnInner). Its
# opapi target (aclnn_*.cpp, *_l0.cpp: the aclnn API over the op) is not host tiling code and is not compiled.
HOST_TARGETS = ("optiling", "opsproto", "op_host_aclnnInner")
_TARGET_SOURCES = re.compile(r"target_sources\(\s*(\w+)\s+PRIVATE([^)]*)\)")


def cmake_host_sources(project_dir: Path) -> list[Path] | None:
    """The op_host files the project's CMakeLists.txt builds for HOST_TARGETS, as CANN's build compiles them;
    None (every op_host/*.cpp) without a CMakeLists.txt naming them, or when it names a file the project
    lacks (is_finite and is_inf name histogram_v2_def.cpp, a copy from another op)."""
    cmake = project_dir / "CMakeLists.txt"
    if not cmake.is_file():
        return None
    files = dict.fromkeys(f for target, names in _TARGET_SOURCES.findall(cmake.read_text(errors="replace"))
                          if target in HOST_TARGETS for f in names.split() if f.startswith("op_host/"))
    paths = [project_dir / f for f in files]
    return paths if paths and all(p.is_file() for p in paths) else None


def run_entry(root: Path, entry: Entry, cores: int = 8, bounds: str = "device") -> Result:
    """Compile and run one corpus kernel over its cases. bounds: the runner's bounds mode ("device": judge
    by the output what the NPU runs without a fault, the strict refusals recorded in Result.findings)."""
    from .op_project import OpProject
    from .runner import EmulatorCompileError, EmulatorError
    res = Result(entry.id, entry.source, entry.path, "no cases", bounds=bounds, style=entry.style)
    t0 = time.time()
    if entry.excluded:
        res.result, res.detail = "excluded", entry.excluded
        return res
    path = root / entry.source / entry.path
    if entry.style == "program":
        return _run_program(path, res, bounds, t0)
    try:
        proj = OpProject(path, host_sources=cmake_host_sources(path.parent.parent), opt="-O0")  # -O0: compile time dominates
        if isinstance(entry.cases, ProjectCases):
            cases = entry.cases(path.parent.parent)  # op_kernel/<op>.cpp -> the op project
        else:
            cases = entry.cases() if entry.cases else []
        if not cases:  # compile check only, with the OpDef's first dtype per input and output
            info = proj.info
            proj.library([torch.zeros(1, dtype=_GE_TORCH.get(p.dtypes[0] if p.dtypes else 0, torch.float32))
                          for p in info.inputs],
                         [torch.zeros(1, dtype=_GE_TORCH.get(p.dtypes[0] if p.dtypes else 0, torch.float32))
                          for p in info.outputs])
            res.result, res.detail = "no cases", "compiles; no reference cases in the manifest"
        worst = 0.0
        names_in = [p.name for p in proj.info.inputs]
        for case in cases:
            outputs = case.outputs
            if not outputs and proj.info.outputs:  # in-place op: the OpDef lists the input (var) as its output
                outputs = [case.inputs[names_in.index(o.name)] for o in proj.info.outputs if o.name in names_in]
            run = proj.run(case.inputs, outputs, case.attrs, cores=entry.cores or cores, bounds=bounds)
            for what, n in run.counters.get("findings", {}).items():
                res.findings[what] = res.findings.get(what, 0) + n
            res.blocks.append(run.block_dim)
            res.keys.append(run.tiling_key)
            pairs = list(zip(case.outputs, case.expected))
            pairs += [(case.inputs[i], e) for i, e in zip(case.compare or [], case.expected_inputs)]
            for out, ref in pairs:
                if ref is None:
                    continue
                ok, err = _close(out, ref, case.atol, case.rtol)
                worst = max(worst, err)
                if not ok:
                    res.result = "wrong"
                    res.detail = (f"max error {err:.3g} (dtype {out.dtype}, shape {tuple(out.shape)}, "
                                  f"blocks {run.block_dim}, key {run.tiling_key})")
                    return res
        if cases:
            res.result, res.detail = "pass", f"{len(cases)} cases, max error {worst:.2g}" + _findings_note(res)
    except EmulatorCompileError as e:
        res.result, res.detail = "compile", first_blocker(str(e))
    except OSError as e:  # the op_host library does not load: a host API the emulator declares but lacks
        if "undefined symbol" not in str(e):
            res.result, res.detail = "run error", f"harness: {e}"[:600]
        else:
            res.result, res.detail = "compile", f"op_host: undefined symbol {str(e).split(': ')[-1][:160]}"
    except (EmulatorError, ValueError, TypeError, KeyError) as e:
        res.result, res.detail = "run error", str(e).strip().splitlines()[0][:600]
    finally:
        res.seconds = time.time() - t0
    return res


def _run_program(example: Path, res: Result, bounds: str, t0: float) -> Result:
    """A kernel-launch example program (asc_program.py), every scenario its CMakeLists lists: `pass` when
    each one's own check passes; else the first failing scenario's result. `keys` are the scenarios."""
    from . import asc_program
    runs = [r for r in asc_program.run_all_scenarios(example, bounds) if r.result != "n/a"]  # n/a: 950 only
    if not runs:
        res.result, res.detail = "excluded", "every scenario runs only on Ascend 950 (its README)"
        return res
    bad = next((r for r in runs if r.result != "pass"), None)
    res.keys = [int(r.scenario) for r in runs if r.scenario is not None and str(r.scenario).isdigit()]
    for r in runs:
        for f in r.findings:
            res.findings[f] = res.findings.get(f, 0) + 1
    if bad is None:
        res.result = "pass"
        res.detail = f"{len(runs)} scenario(s), the example's own check" + _findings_note(res)
    else:
        res.result = bad.result
        where = f"scenario {bad.scenario}: " if bad.scenario is not None else ""
        res.detail = where + (first_blocker(bad.detail) if bad.result == "compile" else bad.detail)
    res.seconds = time.time() - t0
    return res


def _findings_note(res: Result) -> str:
    """'; strict bounds would refuse: <kind> (<where>), ...' for a pass with device-bounds findings."""
    if not res.findings:
        return ""
    return "; strict bounds refuse: " + "; ".join(sorted(res.findings))[:400]


# What stops a kernel, by the first matching message (result, pattern): the summary's "first blocker" kinds.
BLOCKER_KINDS: list[tuple[str, str, str]] = [
    ("pass", r"", "pass"),
    ("no cases", r"", "no reference cases"),
    ("wrong", r"", "wrong values"),
    ("compile", r"^op_host: ", "host code does not compile or load"),
    ("compile", r"unsupported/undeclared", "kernel uses a name the emulator lacks (or undeclared)"),
    ("compile", r"", "kernel does not compile (other)"),
    ("run error", r"UB overflow", "UB overflow"),
    ("run error", r"outside every kernel argument buffer", "GM access past the allocation"),
    ("run error", r"cross-block GM race", "cross-block GM race"),
    ("run error", r"outside its buffer", "UB access outside a buffer"),
    ("run error", r"host tiling failed|tiling function", "host tiling fails"),
    ("run error", r"", "run error (other)"),
    ("excluded", r"", "excluded"),
]


def blocker_kind(r: Result) -> str:
    return next(kind for result, pattern, kind in BLOCKER_KINDS if r.result == result and re.search(pattern, r.detail))


def summary(results: list[Result]) -> str:
    """Pass counts overall and per source, and the kernels per first-blocker kind (markdown)."""
    counted = [r for r in results if r.result != "excluded"]
    passed = sum(r.result == "pass" for r in counted)
    clean = sum(r.result == "pass" and not r.findings for r in counted)
    modes = sorted({r.bounds for r in counted})
    lines = [f"**{passed} of {len(counted)} kernels pass ({100 * passed / max(1, len(counted)):.0f}%); "
             f"{sum(r.result not in ('compile', 'excluded') for r in counted)} compile unchanged.** "
             f"Bounds: {', '.join(modes)}; {clean} of the passes have no finding (they pass under strict "
             f"bounds too), {passed - clean} pass with accesses strict bounds refuse.", "",
             "| source | kernels | compile | pass |", "| --- | --- | --- | --- |"]
    for source, programs in dict.fromkeys((r.source, r.style == "program") for r in counted):
        rs = [r for r in counted if r.source == source and (r.style == "program") == programs]
        label = SOURCES[source][0] + (" (kernel-launch programs)" if programs else "")
        lines.append(f"| {label} | {len(rs)} | {sum(r.result != 'compile' for r in rs)} | "
                     f"{sum(r.result == 'pass' for r in rs)} |")
    lines += ["", "| first blocker | kernels |", "| --- | --- |"]
    kinds: dict[str, int] = {}
    for r in counted:
        kinds[blocker_kind(r)] = kinds.get(blocker_kind(r), 0) + 1
    lines += [f"| {k} | {n} |" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


def markdown(results: list[Result]) -> str:
    lines = ["| kernel | source | result | blocks / tiling keys | first blocker or detail |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        repo, commit = SOURCES[r.source]
        bk = f"{sorted(set(r.blocks))} / {sorted(set(r.keys))}" if r.blocks else ""
        lines.append(f"| {r.id} | {repo}@{commit[:7]} `{r.path}` | {r.result} | {bk} | {r.detail.replace('|', '/')} |")
    return "\n".join(lines)
