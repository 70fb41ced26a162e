"""`migration-drift`'s usage errors (issue 27, item 3): the brokers are required, --reads needs --watch, numbers are
bounded; each refused with exit 2 before anything is read (the comparison itself runs against real brokers in
tests/kafka/test_migration_drift_real.py)."""

from __future__ import annotations

import pytest

from core.cli import main
from core.cli.drift import _reads
from core.cli.app import build_parser

ZK = "127.0.0.1:1/nowhere"  # never reached: every case is refused first


@pytest.mark.parametrize("argv, says", [
    (["--zk", ZK], "give --bootstrap-server"),
    (["--zk", ZK, "--bootstrap-server", "127.0.0.1:1", "--reads", "3"], "--reads N needs --watch S"),
    (["--zk", ZK, "--bootstrap-server", "127.0.0.1:1", "--watch", "1", "--reads", "0"], "--reads must be 1 or more"),
])
def test_usage_errors_are_refused_before_reading(argv, says, capsys):
    assert main(["migration-drift", *argv]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["--lasting", "0"], ["--watch", "nan"], ["--lasting", "-5"]])
def test_bad_numbers_are_argparse_errors(bad, capsys):
    with pytest.raises(SystemExit) as e:
        main(["migration-drift", "--zk", ZK, "--bootstrap-server", "127.0.0.1:1", *bad])
    assert e.value.code == 2 and "must be a number of seconds" in capsys.readouterr().err


def test_watch_reads_long_enough_for_a_difference_to_last():
    parse = build_parser().parse_args
    base = ["migration-drift", "--zk", ZK, "--bootstrap-server", "b:9092"]
    assert _reads(parse(base)) == 1
    assert _reads(parse(base + ["--watch", "5"])) == 7  # t = 0, 5, ..., 30
    assert _reads(parse(base + ["--watch", "7", "--lasting", "10"])) == 3  # t = 0, 7, 14
    assert _reads(parse(base + ["--watch", "1", "--reads", "2"])) == 2
