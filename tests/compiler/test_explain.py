"""`trex explain`: built-in examples and a user factory file; report lines and dumps."""
import textwrap

from trex.compiler import explain


def test_explain_builtin_example_prints_matches(capsys):
    assert explain.main(["--example", "swiglu_limited", "--backward"]) == 0
    out = capsys.readouterr().out
    assert "matched: swiglu_limited x2" in out
    assert "forward graph fused ops: swiglu_limited x2" in out
    assert "backward graph fused ops: swiglu_limited_bwd x2" in out


def test_explain_factory_file_reports_near_miss_and_dump(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(textwrap.dedent("""
        import torch

        def norm_with_gate(x, gate):
            xf = x.float()
            y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
            return gate * y.to(x.dtype), y          # y is used twice: the weighted chain can't own it

        def make():
            return norm_with_gate, (torch.randn(4, 16), torch.randn(16))
    """))
    dump = tmp_path / "dump"
    assert explain.main([f"{model}:make", "--dump-dir", str(dump)]) == 0
    out = capsys.readouterr().out
    assert "near-miss rms_norm" in out and "also used outside the chain" in out
    assert "matched: rms_norm x1" in out
    assert f"wrote {dump}" in out
    assert any(p.name == "matches.txt" for p in dump.rglob("*"))
