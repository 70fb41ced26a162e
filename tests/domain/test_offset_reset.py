"""core.offset_reset: kafka-consumer-groups --reset-offsets' modes, formats and rules (Kafka 3.9's
ConsumerGroupCommand), pure."""

from __future__ import annotations

import pytest

from core.errors import InputFileError, ValidationError
from core.offset_reset import (
    GroupNotInactiveError,
    Offsets,
    export_csv,
    format_plan,
    parse_csv,
    parse_datetime,
    parse_duration_ms,
    parse_topic_scope,
    partitions_in_scope,
    plan_reset,
    rollback_of,
    spec,
    undo_offsets,
)

T = "orders"
PARTS = [(T, 0), (T, 1), (T, 2)]
OFFSETS = Offsets("Empty", committed={(T, 0): 5, (T, 1): 10},
                  earliest={(T, 0): 3, (T, 1): 0, (T, 2): 0}, latest={(T, 0): 20, (T, 1): 20, (T, 2): 20},
                  by_time={(T, 0): 6, (T, 1): None, (T, 2): 6})


def new(mode: str, value: str | None = None, parts=PARTS, offsets=OFFSETS) -> dict:
    return plan_reset("g", spec(mode, value, group="g", now_ms=1_000_000), parts, offsets).new_offsets


def test_earliest_latest_current_are_the_log_offsets_unclamped():
    assert new("to-earliest") == {(T, 0): 3, (T, 1): 0, (T, 2): 0}
    assert new("to-latest") == {(T, 0): 20, (T, 1): 20, (T, 2): 20}
    assert new("to-current") == {(T, 0): 5, (T, 1): 10, (T, 2): 20}  # nothing committed: the latest, as the tool


def test_to_offset_shift_and_file_are_clamped_with_the_tools_warning():
    assert new("to-offset", "1") == {(T, 0): 3, (T, 1): 1, (T, 2): 1}
    assert new("to-offset", "99") == {(T, 0): 20, (T, 1): 20, (T, 2): 20}
    assert new("shift-by", "-4", [(T, 0), (T, 1)]) == {(T, 0): 3, (T, 1): 6}
    assert new("shift-by", "+15", [(T, 0), (T, 1)]) == {(T, 0): 20, (T, 1): 20}
    plan = plan_reset("g", spec("to-offset", "1"), [(T, 0)], OFFSETS)
    assert plan.rows[0].note == ("New offset (1) is lower than earliest offset for topic partition orders-0. "
                                 "Value will be set to 3")
    with pytest.raises(ValidationError, match="Cannot shift offset for partition orders-2 since there is no "
                                              "current committed offset"):
        new("shift-by", "1")
    assert new("from-file", f"{T},0,1\n{T},1,12\n") == {(T, 0): 3, (T, 1): 12}


def test_time_modes_fall_back_to_latest_where_no_message_is_that_late():
    plan = plan_reset("g", spec("to-datetime", "2026-01-01T00:00:00.000"), PARTS, OFFSETS)
    assert plan.new_offsets == {(T, 0): 6, (T, 1): 20, (T, 2): 6}
    assert plan.rows[1].note == "Partition 1 from topic orders is empty. Falling back to latest known offset."
    assert spec("by-duration", "PT1M", now_ms=1_000_000).timestamp_ms == 940_000


def test_the_dry_run_shows_old_new_and_the_lag_left():
    plan = plan_reset("g", spec("to-offset", "15"), PARTS, OFFSETS)
    assert [(r.current, r.new, r.lag_after) for r in plan.rows] == [(5, 15, 5), (10, 15, 5), (None, 15, 5)]
    text = format_plan(plan)
    assert text.splitlines()[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET",
                                            "LOG-END-OFFSET", "LAG-AFTER"]
    assert text.splitlines()[3].split() == ["g", "orders", "2", "-", "15", "20", "5"]


@pytest.mark.parametrize("state", ["Stable", "PreparingRebalance", "CompletingRebalance"])
def test_a_group_with_members_is_refused_with_kafkas_message(state):
    with pytest.raises(GroupNotInactiveError) as e:
        plan_reset("g", spec("to-earliest"), PARTS, Offsets(state, {}, {}, {}))
    assert str(e.value).startswith(f"Assignments can only be reset if the group 'g' is inactive, but the current "
                                   f"state is {state}.")


def test_dead_and_empty_groups_are_reset():
    for state in ("Empty", "Dead"):
        assert plan_reset("g", spec("to-latest"), [(T, 0)], Offsets(state, {}, {}, {(T, 0): 4})).new_offsets == \
            {(T, 0): 4}


def test_durations_as_java_parses_them():
    assert parse_duration_ms("PT1H") == 3_600_000
    assert parse_duration_ms("P1DT2H3M4.5S") == ((26 * 60 + 3) * 60 + 4) * 1000 + 500
    assert parse_duration_ms("pt30m") == 1_800_000
    assert parse_duration_ms("-PT1M") == -60_000
    for bad in ("1h", "PT", "P", "P1H", "PT1D", ""):
        with pytest.raises(ValidationError, match="PnDTnHnMnS"):
            parse_duration_ms(bad)


def test_datetimes_as_kafka_parses_them():
    assert parse_datetime("2026-01-02T03:04:05.678") == 1767323045678  # UTC when no zone
    assert parse_datetime("2026-01-02T03:04:05.678Z") == 1767323045678
    assert parse_datetime("2026-01-02T05:04:05.678+02:00") == 1767323045678
    assert parse_datetime("2026-01-02T05:04:05.678+02") == 1767323045678
    for bad in ("2026-01-02", "yesterday", "2026-13-02T00:00:00.000"):
        with pytest.raises(ValidationError, match="date-time"):
            parse_datetime(bad)


def test_csv_both_forms_and_bad_lines():
    assert parse_csv("a,0,5\na,1,7\n", "g") == {("a", 0): 5, ("a", 1): 7}
    assert parse_csv("g,a,0,5\nother,a,0,9\n", "g") == {("a", 0): 5}
    assert parse_csv("g,with,comma,a,0,5\n", "g,with,comma") == {("a", 0): 5}
    with pytest.raises(InputFileError, match="No reset plan for group g found"):
        parse_csv("other,a,0,9\n", "g")
    with pytest.raises(InputFileError, match="line 2"):
        parse_csv("a,0,5\na,x,7\n", "g")
    with pytest.raises(InputFileError, match="empty"):
        parse_csv("\n", "g")
    assert export_csv({("a", 1): 7, ("a", 0): 5}) == "a,0,5\na,1,7\n"


def test_scopes():
    assert parse_topic_scope(["a", "b:0,2"]) == [("a", None), ("b", (0, 2))]
    with pytest.raises(ValidationError, match="Invalid topic arg 'b:0:1'"):
        parse_topic_scope(["b:0:1"])
    committed = {("a", 1): 4, ("c", 0): 1}
    counts = {"a": 2, "b": 3}
    assert partitions_in_scope(spec("to-latest"), all_topics=True, topics=[], committed=committed,
                               partition_counts=counts) == [("a", 1), ("c", 0)]
    assert partitions_in_scope(spec("to-latest"), all_topics=False, topics=[("a", None), ("b", (2,))],
                               committed=committed, partition_counts=counts) == [("a", 0), ("a", 1), ("b", 2)]
    with pytest.raises(ValidationError, match="One of the reset scopes should be defined"):
        partitions_in_scope(spec("to-latest"), all_topics=False, topics=[], committed={}, partition_counts={})
    with pytest.raises(ValidationError, match="does not exist"):
        partitions_in_scope(spec("to-latest"), all_topics=False, topics=[("zz", None)], committed={},
                            partition_counts=counts)
    with pytest.raises(ValidationError, match="b-3 does not exist"):
        partitions_in_scope(spec("to-latest"), all_topics=False, topics=[("b", (3,))], committed={},
                            partition_counts=counts)


def test_bad_values_are_typed_errors():
    for mode, value in (("to-offset", "x"), ("shift-by", "1.5"), ("to-offset", None), ("sideways", "1")):
        with pytest.raises(ValidationError):
            spec(mode, value)


def test_undo_puts_back_committed_and_clears_what_was_not():
    rb = rollback_of("g", {("a", 0): 5, ("a", 1): None})
    assert undo_offsets(rb) == ("g", {("a", 0): 5}, [("a", 1)])
    with pytest.raises(ValidationError, match="no consumer-offset undo"):
        undo_offsets({"action": "delete-topic"})


def test_the_command_line_refuses_bad_input_before_reaching_any_broker(capsys, tmp_path):
    from core.cli import main

    base = ["reset-offsets", "--bootstrap-server", "127.0.0.1:1", "--kafka-timeout", "1", "--group", "g",
            "--store", str(tmp_path / "k.sqlite")]
    assert main(base + ["--all-topics", "--to-datetime", "yesterday"]) == 1
    assert "is not a date-time" in capsys.readouterr().err
    assert main(base + ["--all-topics", "--by-duration", "1h"]) == 1
    assert "PnDTnHnMnS" in capsys.readouterr().err
    assert main(base + ["--all-topics", "--to-earliest", "--to-latest"]) == 2
    assert "exactly one of" in capsys.readouterr().err
    assert main(base + ["--all-topics", "--topic", "t", "--to-earliest"]) == 2
    assert main(base + ["--to-earliest"]) == 2
    assert "One of the reset scopes should be defined: --all-topics, --topic." in capsys.readouterr().err
    assert main(base + ["--all-topics", "--to-earliest", "--dry-run", "--execute"]) == 2
    assert main(base + ["--from-file", str(tmp_path / "missing.csv")]) == 1
    assert "missing.csv" in capsys.readouterr().err
    assert main(["reset-offsets", "--group", "g", "--all-topics", "--to-earliest"]) == 2
    assert "needs the brokers: give --bootstrap-server" in capsys.readouterr().err
    assert not (tmp_path / "k.sqlite").exists()  # nothing recorded either
