"""`trex doctor` lists every sandbox layer, held or with the reason, and its exit status says
whether scoring untrusted code can run here."""
import json
import tomllib
from pathlib import Path

from trex.training.or_data import doctor
from trex.training.or_data.sandbox import KERNEL_LAYERS, host_layers


def test_doctor_reports_every_layer(capsys):
    rc = doctor.main(["--json"])
    findings = json.loads(capsys.readouterr().out)
    assert set(KERNEL_LAYERS) <= set(findings["layers"])
    for name, entry in findings["layers"].items():
        assert entry["held"] == (host_layers()[name] is None)
        assert entry["held"] or entry["why_not"]
    assert rc == (0 if all(findings["layers"][k]["held"] for k in KERNEL_LAYERS) else 1)
    rc_table = doctor.main([])
    table = capsys.readouterr().out
    assert rc_table == rc and all(name in table for name in KERNEL_LAYERS)


def test_doctor_is_a_trex_command():
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["trex.commands"]["doctor"] == "trex.training.or_data.doctor:main"
