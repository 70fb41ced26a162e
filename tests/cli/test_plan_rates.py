"""`plan --rates FILE` (the write-rate goal from the command line) and its refusals: typed errors, exit 1, nothing
written. `--sample-rates` on real brokers is in tests/kafka/test_traffic_real.py."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from tests.domain.test_traffic import hot_cluster


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def files(tmp_path):
    snap, rates = hot_cluster()
    (tmp_path / "snap.json").write_text(snap.to_json())
    (tmp_path / "rates.json").write_text(json.dumps({f"{t}-{p}": r for (t, p), r in rates.items()}))
    return tmp_path / "snap.json", tmp_path / "rates.json"


def test_plan_with_a_rates_file_spreads_the_hot_topic_and_reports_it(tmp_path, capsys):
    snap, rates = files(tmp_path)
    code, _, err = run(capsys, "plan", "--snapshot", snap, "--rates", rates, "-o", tmp_path / "plan.json",
                       "--report", tmp_path / "report.json")
    assert code == 0, err
    assert "write rate per broker: max deviation from target" in err and "within the 10% tolerance" in err
    traffic = json.loads((tmp_path / "report.json").read_text())["report"]["traffic"]
    assert traffic["within_tolerance"] and traffic["max_deviation"][1] <= 0.10 < traffic["max_deviation"][0]
    assert len(traffic["before"]) == len(traffic["after"]) == len(traffic["brokers"]) == 6
    assert json.loads((tmp_path / "plan.json").read_text())["partitions"]


def test_bad_rates_input_is_refused_before_anything_is_written(tmp_path, capsys):
    snap, rates = files(tmp_path)
    out = tmp_path / "plan.json"
    (tmp_path / "bad.json").write_text('{"hot-0": -5}')
    for argv, needle in (
            (["--rates", tmp_path / "bad.json"], "non-negative number of bytes per second"),
            (["--rates", tmp_path / "missing.json"], "missing.json"),
            (["--rates", rates, "--rate-tolerance", "0"], "tolerance must be above 0"),
            (["--sample-rates", "10"], "give --bootstrap-server"),
            (["--sample-rates", "10", "--rates", rates], "not both"),
            (["--rates-output", tmp_path / "r.json"], "give --sample-rates")):
        code, _, err = run(capsys, "plan", "--snapshot", snap, "-o", out, *argv)
        assert code == 1 and err.startswith("error:") and needle in err, (argv, err)
        assert not out.exists()
    with pytest.raises(SystemExit) as e:  # a usage error: argparse exits 2
        main(["plan", "--snapshot", str(snap), "-o", str(out), "--sample-rates", "ten"])
    assert e.value.code == 2 and "SECONDS[:N]" in capsys.readouterr().err
