"""Candidates built to fool the search (issue 24's list), planted as source transforms of the printed
rms_norm AscendC kernel: every one is rejected, with its reason in the search tree; honest variants
(a debug printf) are not.

One search evaluates all the planted kernels of a class table (a module fixture: each planted source is
one g++ compile, the cost of this file)."""
import re

import pytest

from trex.codegen_ascendc.emulator import compiler_available
from trex.tuning import sandbox
from trex.tuning.ascend import AscendBackend
from trex.tuning.search import Planted, Search
from trex.tuning.store import Store

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler for the AscendC emulator")

SHAPE = {"ROWS": 13, "D": 64}                  # bucket ROWS 9..16
CONFIG = {"rows_per_tile": 2, "buffer_depth": 2, "cores": 3}     # 5 + 5 + 3 rows: tails on every core
PROCESS = "__aicore__ inline void Process() {"
CAST_OUT = "Cast(yf_out, ub1_fp32, RoundMode::CAST_RINT, (uint32_t)(tileRows*AlignUp(tl_.D, 16)));"
RSTD = "const float s3 = ub2_fp32.GetValue((uint32_t)(16*i2));"
EPILOGUE = "    // epilogue (once per core)"
X_COPY = "DataCopy(t, xGm_[(uint64_t)(tl_.D*row0)]"     # D=64: rows are 32-B aligned, the contiguous branch


def _sub(old: str, new: str):
    def transform(src: str) -> str:
        assert old in src, f"the printed rms_norm kernel changed: {old!r} not found; update the planted candidate"
        return src.replace(old, new)
    return transform


def _at_process_start(code: str):
    return _sub(PROCESS, PROCESS + "\n    " + code)


def _raw_pointer_loads(src: str) -> str:
    """Load x with memcpy into the queue's UB tensor instead of DataCopy: same data, no MTE2 count."""
    i = src.index(X_COPY)
    j = src.index(";", i) + 1
    raw = ("for (int64_t i = 0; i < blockCount; ++i) std::memcpy(t.addr_ + i * ubStride, "
           "xGm_.GetPhyAddr() + (tl_.D * (row0 + i)), blockLen * sizeof(bfloat16_t));")
    return "#include <cstring>\n" + src[:i] + raw + src[j:]


FORGE = r'''#include <cstdio>
#include <cstring>
#include <unistd.h>
// at load time: a verdict on stdout (the old JSON-lines channel) and a result frame on every fd
__attribute__((constructor)) static void trex_forge_verdict() {
  std::printf("{\"ok\": true, \"checks\": 3}\n");
  std::fflush(stdout);
  const char* frame = "TREX-RESULT 00000000000000000000000000000000 0\n";
  for (int fd = 3; fd < 64; ++fd) (void)!write(fd, frame, std::strlen(frame));
}
'''

# (name, transform, what the recorded reason must say)
CHEATS = [
    ("only_when_sync_checked", _at_process_start("if (!trex_emu::RT().check_sync) return;"),
     r"sync checks off\).*behaves differently when it is watched"),
    ("idle_on_a_one_core_launch", _at_process_start("if (GetBlockNum() == 1) return;"), r"on 1 core \(profile"),
    ("erases_its_counters", _sub(EPILOGUE, "    trex_emu::RT().counters = trex_emu::Counters();\n" + EPILOGUE),
     r"counted mte2 bytes \(0\) are fewer"),
    ("uncounted_raw_pointer_loads", _raw_pointer_loads, r"counted mte2 bytes \(\d+\) are fewer .*raw pointer"),
    ("forged_verdict_and_frame", lambda s: FORGE + _at_process_start("return;")(s),
     r"result frames \(a forged one among them\)"),
    ("cast_truncates", _sub(CAST_OUT, CAST_OUT.replace("CAST_RINT", "CAST_TRUNC")), r"mean error towards zero"),
    ("cast_floors", _sub(CAST_OUT, CAST_OUT.replace("CAST_RINT", "CAST_FLOOR")), r"mean signed error"),
    ("rstd_rounded_to_bf16", _sub(RSTD, RSTD.replace("= ub2_fp32.GetValue((uint32_t)(16*i2));",
                                                     "= (float)bfloat16_t(ub2_fp32.GetValue((uint32_t)(16*i2)));")),
     r"error common to a row|mean error towards zero"),
    ("bias_before_the_cast", _sub(CAST_OUT, "Adds(ub1_fp32, ub1_fp32, 4e-3f, (int32_t)(tileRows*AlignUp(tl_.D, 16)));"
                                            "\n      PipeBarrier<PIPE_V>();\n      " + CAST_OUT),
     r"mean signed error|error common to a row"),
    ("wrong_at_one_row_count", _at_process_start("if (tl_.rows == 11) return;"), r"ROWS=11 .*non-finite"),
]
def _seed0_first_bits() -> int:
    """The bits of x[0, 0] in the old profiler's fixed seed-0 inputs."""
    from trex.tuning import harness
    b = AscendBackend("ascend910b", "rms_norm", "bf16", SHAPE)
    x = harness.make_inputs(b.program, SHAPE, 0)["x"]
    return int(x.reshape(-1)[:1].view(__import__("torch").int16).item()) & 0xFFFF


# (name, transform): kernels that are right on every input they are ever given
HONEST = [("debug_printf", _sub(RSTD, RSTD + '\n        std::printf("debug: rstd %f\\n", (double)s3);')),
          # does nothing when its input is the old profiler's seed-0 data: no evaluation draws it any more,
          # and every profiled launch is judged, so it gains nothing
          ("recognises_seed_0_inputs", lambda src: _at_process_start(
              f"if (*reinterpret_cast<const uint16_t*>(xGm_.GetPhyAddr()) == {_seed0_first_bits()}u) return;")(src))]


@pytest.fixture(scope="module")
def planted_tree(tmp_path_factory):
    b = AscendBackend("ascend910b", "rms_norm", "bf16", SHAPE)
    planted = [Planted(name, CONFIG, t) for name, t, _ in CHEATS + [(n, t, None) for n, t in HONEST]]
    store = Store(tmp_path_factory.mktemp("store") / "store.json")
    res = Search(b, store, max_candidates=len(planted) + 2, patience=99, checks=2, planted=planted).run(use_store=False)
    return res, {n.move.split(":", 1)[1]: n for n in res.nodes if n.move and n.move.startswith("planted:")}


@pytest.mark.parametrize("name,pattern", [(n, p) for n, _, p in CHEATS], ids=[n for n, _, _ in CHEATS])
def test_every_cheat_is_rejected_with_its_reason_in_the_tree(planted_tree, name, pattern):
    res, nodes = planted_tree
    node = nodes[name]
    assert node.status == "rejected", (node.status, node.reason)
    assert re.search(pattern, node.reason, re.S), node.reason
    assert node.time_s is None and node.profile is None
    assert res.time_s <= res.baseline_time_s


def test_an_honest_variant_with_a_debug_printf_is_not_rejected(planted_tree):
    _, nodes = planted_tree
    assert nodes["debug_printf"].status != "rejected", nodes["debug_printf"].reason


def test_a_kernel_that_recognises_the_profilers_inputs_gains_nothing(planted_tree):
    res, nodes = planted_tree
    node, honest = nodes["recognises_seed_0_inputs"], nodes["debug_printf"]
    assert node.status == "rolled_back" and node.time_s >= honest.time_s, (node.status, node.reason)
    assert res.config != CONFIG or res.time_s >= honest.time_s


def test_the_result_records_the_printers_kernel_not_a_variant(planted_tree):
    res, _ = planted_tree
    b = AscendBackend("ascend910b", "rms_norm", "bf16", SHAPE)
    import hashlib
    assert res.kernel_sha256 == hashlib.sha256(b.printer_source(res.config).encode()).hexdigest()
    assert res.made_with["checks"] == 2 and res.made_with["profile"] == b.label


def _swap_in(twin_path: str):
    """After computing honestly, replace the library it runs from with `twin_path` (rename over it)."""
    head = ("#include <dlfcn.h>\n#include <cstdio>\n#include <string>\n"
            "static void trex_swap_binary() {\n  Dl_info info;\n  if (!dladdr((void*)&trex_swap_binary, &info)) return;\n"
            f'  std::FILE* in = std::fopen("{twin_path}", "rb");\n  if (!in) return;\n'
            '  std::string tmp = std::string(info.dli_fname) + ".swap";\n  std::FILE* out = std::fopen(tmp.c_str(), "wb");\n'
            "  if (!out) { std::fclose(in); return; }\n  char buf[65536];\n  size_t n;\n"
            "  while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) std::fwrite(buf, 1, n, out);\n"
            "  std::fclose(in);\n  std::fclose(out);\n  std::rename(tmp.c_str(), info.dli_fname);\n}\n")
    return lambda src: head + _sub(EPILOGUE, "    trex_swap_binary();\n" + EPILOGUE)(src)


@pytest.mark.parametrize("sandboxed", [False, True], ids=["no-sandbox", "bwrap"])
def test_a_binary_swap_is_rejected_or_impossible(monkeypatch, tmp_path, sandboxed):
    """A kernel that computes honestly and then renames a do-nothing twin's library over its own: without
    the sandbox the judge sees the library's hash change and rejects it; under bubblewrap the file system
    is read-only for it, the swap fails and what was verified is what ran."""
    if sandboxed and sandbox.bwrap() is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    if not sandboxed:
        monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    b = AscendBackend("ascend910b", "rms_norm", "bf16", SHAPE)
    twin = b.compile(CONFIG, _at_process_start("return;"))
    twin_path = sandbox.build(twin.source, b.opt).path
    # a source of its own per run (the in-memory build cache would otherwise hand the other run's library)
    swap = _swap_in(twin_path)
    swapper = Planted("binary_swap", CONFIG, lambda src: f"// {sandboxed}\n" + swap(src))
    res = Search(b, Store(tmp_path / "s.json"), max_candidates=3, checks=1, planted=[swapper]).run(use_store=False)
    node = next(n for n in res.nodes if n.move == "planted:binary_swap")
    if sandboxed:
        assert node.status != "rejected", node.reason
        binary = sandbox.build(swapper.source_transform(b.printer_source(CONFIG)), b.opt)
        assert sandbox.sha256_file(binary.path) == binary.sha256 != sandbox.sha256_file(twin_path)
    else:
        assert node.status == "rejected" and "rewritten while it ran (a binary swap)" in node.reason, node.reason


SHADOW_WORKER = '''import json, os, sys
req = json.loads(sys.stdin.read())
os.write(int(sys.argv[1]), ("TREX-RESULT " + req["nonce"] + " forged\\n").encode())
'''
SHADOW_VERIFY = 'import sys\nfor line in sys.stdin:\n    print(\'{"ok": true, "checks": 3}\', flush=True)\n'


def _plant_verifier_stand_ins(root: str):
    """At load time, write stand-in verifiers and workers (answering "ok") into `root`: what a kernel
    that tries to take over later verifications does."""
    files = {f"{root}/trex/__init__.py": "", f"{root}/trex/tuning/__init__.py": "",
             f"{root}/trex/tuning/kernel_worker.py": SHADOW_WORKER, f"{root}/trex/tuning/verify.py": SHADOW_VERIFY,
             f"{root}/tuning/__init__.py": "", f"{root}/tuning/verify.py": SHADOW_VERIFY}
    body = "".join(f'  trex_put("{p}", {json_c(t)});\n' for p, t in files.items())
    head = ("#include <cstdio>\n#include <sys/stat.h>\n#include <string>\n"
            "static void trex_put(const std::string& p, const char* text) {\n"
            "  for (size_t i = 1; i < p.size(); ++i) if (p[i] == '/') mkdir(p.substr(0, i).c_str(), 0755);\n"
            '  if (std::FILE* f = std::fopen(p.c_str(), "w")) { std::fputs(text, f); std::fclose(f); }\n}\n'
            "__attribute__((constructor)) static void trex_take_over() {\n" + body + "}\n")
    return lambda src: head + _at_process_start("return;")(src)


def json_c(text: str) -> str:
    """A C string literal of `text`."""
    import json
    return json.dumps(text)


@pytest.mark.parametrize("sandboxed", [False, True], ids=["no-sandbox", "bwrap"])
def test_verifier_replacement_and_working_directory_shadowing_change_nothing(monkeypatch, tmp_path, sandboxed):
    """The search runs from a directory holding its own `tuning/` and `trex/tuning/` packages (a stand-in
    verifier and kernel worker that answer "ok"), and a candidate writes more stand-ins there at load time.
    Workers run `python -I` on the installed package's absolute path, and the verdict is the judge's in the
    searching process: the stand-ins are never run, a wrong kernel after them is still rejected and an
    honest one still passes."""
    if sandboxed and sandbox.bwrap() is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    if not sandboxed:
        monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    cwd = tmp_path / "cwd"
    for rel, text in {"trex/__init__.py": "", "trex/tuning/__init__.py": "", "tuning/__init__.py": "",
                      "trex/tuning/kernel_worker.py": SHADOW_WORKER, "trex/tuning/verify.py": SHADOW_VERIFY,
                      "tuning/verify.py": SHADOW_VERIFY}.items():
        (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
        (cwd / rel).write_text(text)
    monkeypatch.chdir(cwd)
    b = AscendBackend("ascend910b", "rms_norm", "bf16", SHAPE)
    planted = [Planted("take_over_the_verifier", CONFIG, _plant_verifier_stand_ins(str(tmp_path / "elsewhere"))),
               Planted("skip_the_rest", CONFIG, _at_process_start("if (GetBlockIdx() > 0) return;")),
               Planted("honest_after_it", dict(CONFIG, rows_per_tile=3), None)]
    res = Search(b, Store(tmp_path / "s.json"), max_candidates=5, checks=1, planted=planted).run(use_store=False)
    nodes = {n.move: n for n in res.nodes}
    assert nodes["planted:take_over_the_verifier"].status == "rejected"
    assert "non-finite" in nodes["planted:skip_the_rest"].reason, nodes["planted:skip_the_rest"].reason
    assert nodes["planted:skip_the_rest"].status == "rejected"
    assert nodes["planted:honest_after_it"].status != "rejected", nodes["planted:honest_after_it"].reason
    # the stand-ins were written (no sandbox) or could not be (bwrap): either way they never answered
    assert (tmp_path / "elsewhere" / "tuning" / "verify.py").exists() is not sandboxed
