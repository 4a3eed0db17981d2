"""`trex explain`: built-in examples and a user factory file; report lines and dumps."""
import textwrap

from trex.compiler import explain


def test_explain_builtin_example_prints_matches(capsys):
    assert explain.main(["--example", "swiglu_limited", "--backward"]) == 0
    out = capsys.readouterr().out
    # the pattern's four chains (limited and plain, routed or not), one region each
    assert "matched: swiglu_limited x4" in out
    assert "forward graph fused ops: swiglu_limited x4" in out
    assert "backward graph fused ops: swiglu_limited_bwd x4" in out


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


def test_explain_near_miss_names_source_lines_not_node_names(tmp_path, capsys):
    """A chain that computes other mathematics (the mean over the wrong dim) is explained in one line:
    the closest pattern, the user's file:line, the first differing op with its file:line."""
    import re

    model = tmp_path / "eps_outside.py"
    model.write_text(textwrap.dedent("""
        import torch

        def norm(x, w):
            xf = x.float()
            return w * (xf * torch.rsqrt(xf.pow(2).mean(0, keepdim=True) + 1e-6)).to(x.dtype)

        def make():
            return norm, (torch.randn(4, 16), torch.randn(16))
    """))
    assert explain.main([f"{model}:make"]) == 0
    out = capsys.readouterr().out
    assert "matched: nothing" in out
    (line,) = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("near-miss rms_norm")]
    assert re.match(r"near-miss rms_norm at eps_outside\.py:6: .+ at eps_outside\.py:6", line), line


import pytest  # noqa: E402


@pytest.mark.parametrize("argv,argument,valid", [
    (["--example", "rope", "--patterns", "nosuch"], "--patterns", "rms_norm"),
    (["--example", "rope", "--target", "nosuch"], "--target", "cpu"),
])
def test_explain_bad_names_are_one_line_and_exit_2(argv, argument, valid, capsys):
    with pytest.raises(SystemExit) as exit_info:
        explain.main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert argument in line and "nosuch" in line and valid in line
    assert "Traceback" not in captured.err + captured.out


def test_trex_logs_typo_is_reported_once(monkeypatch):
    import logging

    from trex.compiler import logs

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logs.log.addHandler(handler)
    try:
        monkeypatch.setenv("TREX_LOGS", "match,graphs")
        assert not logs.enabled("matches") and logs.enabled("graphs")
        logs.enabled("matches")
    finally:
        logs.log.removeHandler(handler)
    messages = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(messages) == 1 and "match" in messages[0] and "matches" in messages[0] and "all" in messages[0]
