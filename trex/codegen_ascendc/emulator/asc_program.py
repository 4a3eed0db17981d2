"""Kernel-launch `.asc` programs in the emulator: the kernel, its host `main` and a `<<<>>>` launch in
one file, built the way CANN's CPU-debug mode builds them (`-DCMAKE_ASC_RUN_MODE=cpu`), unchanged.

asc-devkit's examples are written so (examples/01_simd_cpp_api/...: `<name>.asc`, a CMakeLists.txt whose
`add_executable(demo ...)` compiles it, `scripts/gen_data.py` writing `input/*.bin` and
`output/golden.bin`, and a README whose run block is `python3 ../scripts/gen_data.py; ./demo;
python3 ../scripts/verify_result.py output/output.bin output/golden.bin`). `run_example(dir)` does what
that README says in a fresh build directory: the CMake definitions (scenario numbers and the like) from
the CMakeLists, the program compiled with g++ against the emulator's headers (acl/acl.h: AscendCL's
runtime calls, device memory as bounds-checked GM regions), gen_data, the program, the verify script.

What the toolchain does and g++ does not, done here: `kernel<<<blocks, l2ctrl, stream>>>(args)` (the asc
language's launch, which bisheng compiles) becomes `trex_emu::AscLaunch("kernel", blocks, stream,
[=](auto&&... a) { kernel(a...); }, args)` (trex_emu/asc_program.h: the arguments are evaluated at the
launch; a launch on a stream being captured is recorded into the aclmdlRI model) in a copy of the source;
every other line is the program's.

    python -m trex.codegen_ascendc.emulator.asc_program EXAMPLE_DIR [--scenario N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .runner import INCLUDE_DIR, find_compiler, summarize_compile_errors, uninitialized_locals_flags

HOST_INCLUDE_DIR = Path(__file__).parent / "include_host"
# asc-devkit's `--npu-arch` values -> the macros CANN's CPU-debug build defines for them
ARCH_DEFINES = {"dav-2201": ["-D__NPU_ARCH__=2201", "-D__CCE_AICORE__=220"],
                "dav-2002": ["-D__NPU_ARCH__=2002", "-D__CCE_AICORE__=200"]}
STEP_TIMEOUT_S = 300


# ------------------------------------------------------------------------------------ the <<<>>> launch

def _skip_balanced(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket closing the one at text[i]."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {open_ch}{close_ch} after offset {i}")


def _callee_start(text: str, end: int) -> int:
    """Start of the kernel expression ending at text[end] (exclusive): `name`, `ns::name`,
    `name<T, N>` (template arguments may nest)."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if i > 0 and text[i - 1] == ">":  # template arguments: walk back to the matching '<'
        depth = 0
        while i > 0:
            i -= 1
            if text[i] == ">":
                depth += 1
            elif text[i] == "<":
                depth -= 1
                if depth == 0:
                    break
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_:"):
        i -= 1
    return i


_LAUNCH = re.compile(r"<<<")
_CODE_MASK = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _mask(source: str) -> str:
    """`source` with comments and string/char literals blanked (same length, newlines kept)."""
    return _CODE_MASK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)


def _top_level_split(code: str, source: str, begin: int, end: int) -> list[str]:
    """source[begin:end] split at the commas outside brackets (code: the masked text)."""
    parts, depth, last = [], 0, begin
    for i in range(begin, end):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(source[last:i])
            last = i + 1
    parts.append(source[last:end])
    return parts


def translate_launches(source: str) -> tuple[str, int]:
    """The source with every `kernel<<<blocks, l2ctrl, stream>>>(args)` outside comments and strings
    replaced by a call of the emulator's launch, on one line (line numbers stay the file's); returns
    (text, number of launches)."""
    code = _mask(source)
    out, pos, count = [], 0, 0
    for m in _LAUNCH.finditer(code):
        if m.start() < pos:
            continue
        close = code.find(">>>", m.end())
        start = _callee_start(code, m.start())
        kernel = source[start:m.start()].strip()
        paren = close + 3
        while close >= 0 and paren < len(code) and code[paren].isspace():
            paren += 1
        if close < 0 or not kernel or paren >= len(code) or code[paren] != "(":
            line = source.count("\n", 0, m.start()) + 1
            raise ValueError(f"line {line}: a <<<...>>> launch that is not `kernel<<<blocks, l2ctrl, stream>>>(args)`")
        args_end = _skip_balanced(code, paren, "(", ")")
        config = _top_level_split(code, source, m.end(), close)
        blocks = config[0].strip()
        stream = config[2].strip() if len(config) > 2 and config[2].strip() else "nullptr"
        name = json.dumps(kernel.split("<")[0].strip())
        args = source[paren + 1:args_end - 1]
        out.append(source[pos:start])
        out.append(f"::trex_emu::AscLaunch({name}, ({blocks}), ({stream}), [=](auto&&... trex_a) {{ {kernel}(trex_a...); }}"
                   + (f",{args})" if args.strip() else ")"))
        pos = args_end
        count += 1
    out.append(source[pos:])
    return "".join(out), count


# ------------------------------------------------------------------------------------ CMake and README

@dataclass
class Build:
    sources: list[Path]
    defines: list[str]             # NAME or NAME=VALUE
    include_dirs: list[Path]
    arch: str
    variables: dict[str, str]
    scenario_var: str | None = None
    scenarios: list[str] = field(default_factory=list)


_CMAKE_CALL = re.compile(r"^\s*(\w+)\s*\((.*?)\)\s*$", re.S | re.M)


def _cmake_calls(text: str):
    text = re.sub(r"#[^\n]*", "", text)
    i = 0
    while True:
        m = re.compile(r"(\w+)\s*\(").search(text, i)
        if not m:
            return
        end = _skip_balanced(text, m.end() - 1, "(", ")")
        yield m.group(1).lower(), text[m.end():end - 1]
        i = end


def _cmake_args(arg_text: str, env: dict[str, str]) -> list[str]:
    def sub(s):
        return re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), s)
    return [sub(a) for a in shlex.split(arg_text, posix=True)]


def _condition(args: list[str], env: dict[str, str]) -> bool:
    """The subset of if() the examples use: [NOT] VAR STREQUAL|EQUAL|MATCHES value, [NOT] DEFINED VAR,
    [NOT] VAR, joined by AND / OR (left to right)."""
    def value(tok):
        return env.get(tok, tok)

    def atom(toks):
        neg = False
        while toks and toks[0] == "NOT":
            neg, toks = not neg, toks[1:]
        if len(toks) >= 3 and toks[1] in ("STREQUAL", "EQUAL", "MATCHES"):
            lhs, op, rhs = value(toks[0]), toks[1], toks[2]
            res = {"STREQUAL": lhs == rhs, "EQUAL": lhs.strip() == rhs.strip(),
                   "MATCHES": re.search(rhs, lhs) is not None}[op]
            rest = toks[3:]
        elif toks and toks[0] == "DEFINED":
            res, rest = toks[1] in env, toks[2:]
        else:
            v = value(toks[0]) if toks else ""
            res, rest = v.upper() not in ("", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"), toks[1:]
        return (not res if neg else res), rest

    res, rest = atom(args)
    while rest:
        op, rest = rest[0], rest[1:]
        rhs, rest = atom(rest)
        res = (res and rhs) if op == "AND" else (res or rhs)
    return res


def _scenario_values(doc: str, default: str) -> list[str]:
    """The values a scenario variable's CACHE doc string lists: `(1-4)`, `1,2,3`, `0 or 1`, `0-3`
    (the first such list when it names several)."""
    m = re.search(r"(\d+)\s*-\s*(\d+)", doc)
    if m:
        return [str(v) for v in range(int(m.group(1)), int(m.group(2)) + 1)]
    m = re.search(r"\d+(?:\s*(?:,|or)\s*\d+)+", doc)
    if m:
        return re.findall(r"\d+", m.group(0))
    return [default]


def parse_cmake(example: Path, overrides: dict[str, str] | None = None) -> Build:
    """The demo target's sources, definitions and include directories, CMake's if() evaluated for the
    variables' defaults (CMAKE_ASC_ARCHITECTURES included) and `overrides` (-D on cmake's line)."""
    overrides = overrides or {}
    env = {"CMAKE_CURRENT_SOURCE_DIR": str(example), "PROJECT_SOURCE_DIR": str(example),
           "CMAKE_SOURCE_DIR": str(example), "CMAKE_ASC_RUN_MODE": "cpu"}
    env.update(overrides)  # -D on cmake's line defines the variable before the CMakeLists runs
    build = Build([], [], [], "", env)
    stack: list[list[bool]] = []  # per if(): [this branch active, a branch was taken]

    def active():
        return all(s[0] for s in stack)

    text = (example / "CMakeLists.txt").read_text()
    for cmd, raw in _cmake_calls(text):
        args = _cmake_args(raw, env)
        if cmd == "if":
            # `if(NOT SCENARIO_NUM IN_LIST VALID_SCENARIOS)`: a -D-only scenario variable and its values
            if ("IN_LIST" in args and args.index("IN_LIST") >= 1 and build.scenario_var is None
                    and "SCENARIO" in args[args.index("IN_LIST") - 1].upper()):
                at = args.index("IN_LIST")
                values = env.get(args[at + 1], "").split() if at + 1 < len(args) else []
                if values:
                    build.scenario_var, build.scenarios = args[at - 1], values
            ok = active() and _condition(args, env)
            stack.append([ok, ok])
            continue
        if cmd == "elseif":
            top = stack[-1]
            parent = all(s[0] for s in stack[:-1])
            top[0] = parent and not top[1] and _condition(args, env)
            top[1] = top[1] or top[0]
            continue
        if cmd == "else":
            top = stack[-1]
            top[0] = all(s[0] for s in stack[:-1]) and not top[1]
            continue
        if cmd == "endif":
            stack.pop()
            continue
        if not active():
            continue
        if cmd == "set" and args:
            name, vals = args[0], args[1:]
            if "CACHE" in vals:
                cache_at = vals.index("CACHE")
                default = vals[0] if cache_at > 0 else ""
                env[name] = overrides.get(name, default)
                doc = vals[cache_at + 2] if len(vals) > cache_at + 2 else ""
                if "SCENARIO" in name.upper() and build.scenario_var is None:
                    build.scenario_var, build.scenarios = name, _scenario_values(doc, default)
            else:
                env[name] = overrides.get(name, " ".join(vals))
        elif cmd == "option" and args:
            env[args[0]] = overrides.get(args[0], args[2] if len(args) > 2 else "OFF")
        elif cmd == "add_definitions":
            build.defines += [a[2:] for a in args if a.startswith("-D")]
        elif cmd == "target_compile_definitions" and args:
            build.defines += [a for a in args[1:] if a not in ("PRIVATE", "PUBLIC", "INTERFACE")]
        elif cmd == "add_executable" and args:
            build.sources = [example / a for a in args[1:] if a.endswith((".asc", ".cpp", ".cc"))]
        elif cmd in ("include_directories", "target_include_directories"):
            items = args if cmd == "include_directories" else args[1:]
            build.include_dirs += [Path(a) if os.path.isabs(a) else example / a for a in items
                                   if a not in ("PRIVATE", "PUBLIC", "INTERFACE", "SYSTEM", "BEFORE", "AFTER")]
    build.arch = env.get("CMAKE_ASC_ARCHITECTURES", "dav-2201")
    return build


@dataclass
class RunBlock:
    """The README's run commands: gen_data's arguments, the program's, verify's (None: no verify step)."""
    gen_args: list[str] | None
    demo_args: list[str]
    verify_args: list[str] | None
    overrides: dict[str, str]


def _fenced_blocks(markdown: str) -> list[str]:
    """The text of each fenced code block (a line starting with ``` opens and the next one closes)."""
    blocks, current = [], None
    for line in markdown.splitlines():
        if line.strip().startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def readme_run_block(example: Path, scenario: str | None = None, scenario_var: str | None = None) -> RunBlock:
    """The first fenced block of README.md that runs `./demo`, with `$VAR` of the scenario substituted."""
    readme = (example / "README.md").read_text(errors="replace")
    for block in _fenced_blocks(readme):
        if "./demo" not in block:
            continue
        env: dict[str, str] = {}
        gen = verify = None
        demo: list[str] = []
        overrides: dict[str, str] = {}
        for line in block.splitlines():
            line = line.split("#")[0].strip()
            for part in (p.strip() for p in line.split(";")):
                assigns = re.findall(r"(\w+)=(\S*)", part)
                if assigns and re.fullmatch(r"(?:\w+=\S*\s*)+", part):  # `A=1 B=x`: shell assignments
                    env.update(dict(assigns))
                    continue
                if scenario is not None and scenario_var:
                    env[scenario_var] = scenario
                part = re.sub(r"\$\{?(\w+)\}?", lambda mm: env.get(mm.group(1), mm.group(0)), part)
                words = shlex.split(part) if part else []
                if not words:
                    continue
                if words[0] == "cmake" and "CMAKE_ASC_RUN_MODE=sim" not in part:
                    overrides.update(dict(w[2:].split("=", 1) for w in words[1:] if w.startswith("-D") and "=" in w))
                elif words[0].startswith("python") and len(words) > 1 and words[1].endswith("gen_data.py"):
                    gen = words[2:]
                elif words[0].startswith("python") and len(words) > 1 and words[1].endswith("verify_result.py"):
                    verify = words[2:]
                elif words[0] == "./demo":
                    demo = words[1:]
        if scenario is not None and scenario_var:
            overrides[scenario_var] = scenario
        return RunBlock(gen, demo, verify, overrides)
    raise ValueError(f"{example}/README.md has no run block with ./demo")


# ------------------------------------------------------------------------------------ build and run

@dataclass
class ProgramResult:
    result: str                    # pass | wrong | run error | compile | n/a (a scenario for Ascend 950 only)
    detail: str
    scenario: str | None = None
    findings: list[str] = field(default_factory=list)
    launches: int = 0
    seconds: float = 0.0


def compile_program(build: Build, out: Path, opt: str = "-O0") -> tuple[Path, int]:
    """The program built into `out/demo`; returns (executable, launches rewritten)."""
    cxx = find_compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler found: install g++ or set CXX to a C++17 compiler")
    units, launches = [], 0
    for src in build.sources:
        text, n = translate_launches(src.read_text(errors="replace"))
        launches += n
        unit = out / (src.stem + ".trex.cpp")
        unit.write_text(f'#include "trex_emu/asc_program.h"\n#line 1 "{src}"\n{text}')
        units.append(unit)
    arch = ARCH_DEFINES.get(build.arch, ARCH_DEFINES["dav-2201"])
    incs = [src.parent for src in build.sources] + build.include_dirs + [INCLUDE_DIR, HOST_INCLUDE_DIR]
    # __ASCC_HOST__: the asc compiler's host pass defines it (kernel_type.h then declares DT_* as enumerators
    # of AscendC::DataType, not as the ccec build's macros); the one g++ pass here compiles host and kernel.
    cmd = [cxx, "-std=c++17", opt, *uninitialized_locals_flags(cxx), "-w", "-DASCENDC_CPU_DEBUG", "-D__ASCC_HOST__", *arch, *[f"-D{d}" for d in build.defines],
           *[f"-I{d}" for d in incs], *map(str, units), "-o", str(out / "demo"), "-pthread"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=STEP_TIMEOUT_S)
    if proc.returncode != 0:
        raise CompileFailed(summarize_compile_errors(proc.stderr))
    return out / "demo", launches


class CompileFailed(RuntimeError):
    pass


_PASS = re.compile(r"test pass|compare(result)?\b.*\bsuccess|result.*\bpass", re.I)
_FAIL = re.compile(r"fail|error|mismatch", re.I)


def _step(cmd: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, timeout=STEP_TIMEOUT_S,
                          env={**os.environ, **(env or {})})


def run_example(example: str | Path, scenario: str | None = None, bounds: str = "device",
                keep: Path | None = None, defines: dict[str, str] | None = None) -> ProgramResult:
    """Build and run one example as its README does (one scenario: the README's when None; `defines`:
    more -D variables on cmake's line)."""
    example = Path(example).resolve()
    t0 = time.time()
    work = Path(tempfile.mkdtemp(prefix="trex_asc_")) if keep is None else keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        probe = parse_cmake(example)
        run = readme_run_block(example, scenario, probe.scenario_var)
        build = parse_cmake(example, {**run.overrides, **(defines or {})})
        res = ProgramResult("run error", "", scenario or run.overrides.get(probe.scenario_var or "", None))
        try:
            exe, res.launches = compile_program(build, work)
        except CompileFailed as e:
            res.result, res.detail = "compile", str(e)[:600]
            return res
        py = sys.executable
        if run.gen_args is not None:
            p = _step([py, str(example / "scripts" / "gen_data.py"), *run.gen_args], work)
            if p.returncode != 0:
                res.detail = f"gen_data.py failed: {(p.stderr or p.stdout).strip()[-400:]}"
                return res
        p = _step([str(exe), *run.demo_args], work, {"TREX_EMU_BOUNDS": bounds})
        text = p.stdout + p.stderr
        res.findings = [ln.strip() for ln in p.stderr.split("findings under device bounds")[-1].splitlines()[1:]
                        if ln.startswith("  ")] if "findings under device bounds" in p.stderr else []
        if p.returncode != 0:
            emu = [ln for ln in p.stderr.splitlines() if ln.startswith("[trex AscendC emulator]")]
            res.detail = (emu[0] if emu else f"the program exited {p.returncode}: {text.strip()[-300:]}")[:600]
            return res
        verdict_text = text
        if run.verify_args is not None:
            v = _step([py, str(example / "scripts" / "verify_result.py"), *run.verify_args], work)
            verdict_text = v.stdout + v.stderr
            if v.returncode != 0 or not _PASS.search(verdict_text) or re.search(r"test fail", verdict_text, re.I):
                res.result, res.detail = "wrong", f"verify_result.py: {verdict_text.strip()[-300:]}"
                return res
        elif not _PASS.search(text) or re.search(r"test fail|compare.*fail", text, re.I):
            res.result, res.detail = "wrong", f"the program's own check: {text.strip()[-300:]}"
            return res
        res.result, res.detail = "pass", f"{res.launches} launch(es); " + (
            "verify_result.py passes" if run.verify_args is not None else "the program's own check passes")
        return res
    except (ValueError, OSError, subprocess.TimeoutExpired, KeyError, IndexError) as e:
        return ProgramResult("run error", f"harness: {type(e).__name__}: {e}"[:600], scenario)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
        elapsed = time.time() - t0
        if "res" in locals():
            res.seconds = elapsed


_ONLY_950 = re.compile(r"\*\*场景\s*(\d+)\s*[：:].*仅在\s*Ascend 950")


def scenarios_only_on_950(example: Path) -> set[str]:
    """Scenarios the README marks `----此场景仅在 Ascend 950PR/Ascend 950DT产品支持` (their kernel code sits
    under `#if __NPU_ARCH__ == 3510`: built for dav-2201 the kernel does nothing for them)."""
    readme = example / "README.md"
    text = readme.read_text(errors="replace") if readme.is_file() else ""
    return {m.group(1) for m in _ONLY_950.finditer(text)}


def run_all_scenarios(example: str | Path, bounds: str = "device") -> list[ProgramResult]:
    """Every scenario the CMakeLists lists (its scenario variable's CACHE doc), else the README's one;
    a scenario the README says runs only on Ascend 950 is reported `n/a` without running it."""
    build = parse_cmake(Path(example).resolve())
    scenarios = build.scenarios or [None]
    only_950 = scenarios_only_on_950(Path(example).resolve())
    return [ProgramResult("n/a", "the README says this scenario runs only on Ascend 950PR/950DT", s)
            if s in only_950 else run_example(example, s, bounds) for s in scenarios]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trex.codegen_ascendc.emulator.asc_program",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("example", help="an example directory (its CMakeLists.txt, README.md, scripts/)")
    ap.add_argument("--scenario", help="one scenario value (default: every one the CMakeLists lists)")
    ap.add_argument("--bounds", choices=("device", "strict"), default="device")
    ap.add_argument("--keep", help="build and run in this directory and keep it")
    a = ap.parse_args(argv)
    ex = Path(a.example)
    if not (ex / "CMakeLists.txt").is_file() or not (ex / "README.md").is_file():
        print(f"asc_program: {a.example!r} is not an example directory (needs CMakeLists.txt and README.md)",
              file=sys.stderr)
        return 2
    results = ([run_example(ex, a.scenario, a.bounds, Path(a.keep) if a.keep else None)] if a.scenario or a.keep
               else run_all_scenarios(ex, a.bounds))
    for r in results:
        print(f"scenario {r.scenario}: {r.result} ({r.seconds:.1f}s) {r.detail}")
        for f in r.findings:
            print(f"    finding: {f}")
    return 0 if all(r.result in ("pass", "n/a") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())


# ------------------------------------------------------------------------------------ corpus membership

# The cube unit (Mmad / LoadData / Matmul / Fixpipe, the L1 and L0C positions) and the register-based and
# SIMT APIs of Ascend 950 are not emulated: an example using any of them is out.
_CUBE = re.compile(r"\bMmad\b|\bLoadData\b|\bMatmul|\bFixpipe\b|TPosition::(A1|B1|CO1|CO2)\b")
_NOT_SIMD = re.compile(r"MicroAPI|RegTensor|__simt|asc_vf|__VEC_SCOPE__")
_SELF_CHECK = re.compile(r"test pass", re.I)


_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _local_headers(sources: list[Path]) -> list[Path]:
    """The headers next to `sources` that they include ("x.h" found in the example directory), transitively."""
    seen: dict[Path, None] = {}
    todo = list(sources)
    while todo:
        src = todo.pop()
        for name in _LOCAL_INCLUDE.findall(src.read_text(errors="replace")):
            h = (src.parent / name).resolve()
            if h.is_file() and h not in seen and h not in sources:
                seen[h] = None
                todo.append(h)
    return list(seen)


def example_membership(repo: Path) -> tuple[list[str], dict[str, str]]:
    """asc-devkit's SIMD C++ API examples (examples/01_simd_cpp_api/**) the emulator can be measured on:
    (members, {excluded example: why}). A member is built for dav-2201 (Atlas A2/A3) by default, uses
    neither the cube unit nor the 950-only register/SIMT APIs, and its README runs `./demo` with a
    check of the result (scripts/verify_result.py in the run block, or the program's own golden check)."""
    members, excluded = [], {}
    for cmake in sorted((repo / "examples" / "01_simd_cpp_api").rglob("CMakeLists.txt")):
        ex = cmake.parent
        rel = str(ex.relative_to(repo))
        if not (ex / "README.md").is_file():
            continue
        try:
            build = parse_cmake(ex)
        except (ValueError, IndexError) as e:
            excluded[rel] = f"CMakeLists not read: {e}"
            continue
        asc = [s for s in build.sources if s.suffix == ".asc" and s.is_file()]
        if not asc:
            continue
        text = "\n".join(_mask(s.read_text(errors="replace")) for s in asc)
        # The cube code may sit in the example's own headers (cross_core_set_wait_flag's KernelMmad is in its
        # .h); an architecture-guarded header still counts, as dav-2201 has the cube unit too.
        cube_text = "\n".join([text] + [_mask(h.read_text(errors="replace")) for h in _local_headers(asc)])
        try:
            run = readme_run_block(ex)
        except ValueError:
            excluded[rel] = "README runs no ./demo"
            continue
        if build.arch != "dav-2201":
            excluded[rel] = f"built for {build.arch} (Atlas A2/A3 is dav-2201)"
        elif _CUBE.search(cube_text):
            excluded[rel] = "uses the cube unit"
        elif _NOT_SIMD.search(text):
            excluded[rel] = "uses the register-based/SIMT API"
        elif run.verify_args is None and not _SELF_CHECK.search("\n".join(s.read_text(errors="replace") for s in asc)):
            excluded[rel] = "checks no result (no verify_result.py, no golden check)"
        else:
            members.append(rel)
    return members, excluded
