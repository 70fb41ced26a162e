"""Issue 19, item 1, the page side: the bad-input corpus typed into the dashboard, through Streamlit's AppTest.

One table, CASES, like tests/cli/test_bad_input_corpus.py (the CLI side): each case names a page, what is typed,
uploaded or configured there, the fragment the page's message must contain and the key of the write button.
Every case runs against a fresh chroot holding the same small hand-written Kafka tree as the CLI corpus (brokers 1-3
on racks r1-r3, controller 1; topics `orders` (2 partitions, RF 3, min.insync.replicas=2) and `a.b`; no controller
acts on it), and asserts:

- no exception (a traceback on the page) and the message: an st.error whose text (markdown-unescaped, see
  dashboard.text.unescape) contains the fragment. Two kinds of case are not refusals and say so (`alert`): a risk
  Kafka would accept (min.insync.replicas above the replication factor) is an st.warning with its own confirmation
  box, and an empty topic name is a prompt (st.info), not an error;
- the write button is absent or disabled, and stays so after every confirmation box the page offers is ticked (a
  risk box is not: its case is about the write without it). AppTest refuses to click a disabled widget, as a
  browser does;
- nothing was written: a byte-for-byte dump of the chroot (tests/support/kafka_tree.dump_tree) before and after is equal,
  and the action history (the store) is empty.

Pages: Create topic, the Topics page's Add partitions and config editor, Reassign's "Import a plan", its partition
sizes and its number fields (replication factor, seed, max moves, waves, throttle), and keel.toml (the router shows
the configuration error on every page). Numbers are typed as text (the fields are text inputs read exactly by
core.numbers): what is not a number is refused by the field, a number the engine bounds reaches it as typed (10**20
partitions is refused with the engine's own message, not truncated to a JavaScript double or dropped). The Leaders
page has no JSON input (its scopes are pickers over the live cluster), so it has no case here. Input files are those
of the CLI corpus (tests/data/bad/).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from streamlit.testing.v1 import AppTest

from core import zkformat as zf
from sandbox.processes.zkserver import free_port
from core.topics import draft_create_topic
from core.zk.session import ZkSession
from dashboard.reassign import plan_view
from tests.support.kafka_tree import dump_tree, write_cluster, write_topic
from tests.cli.test_bad_input_corpus import big_log_dirs, big_reassignment
from tests.dashboard.test_dashboard_actions import by_prefix, set_config_rows, written_assignment  # noqa: F401
from tests.dashboard.test_dashboard_apptest import app, live_connection, texts, write_config  # noqa: F401

DATA = Path(__file__).resolve().parents[1] / "data" / "bad"
CREATE, TOPICS, REASSIGN = "views/create_topic.py", "views/topics.py", "reassign/page.py"
# the boxes that confirm a write; risk boxes (ct_risk_, cfg_risk::, ra_risk) are left alone on purpose
CONFIRMS = ("ct_confirm_", "ap_confirm::", "cfg_confirm::", "ra_confirm_")


def bad(name: str) -> bytes:
    return (DATA / name).read_bytes()


# --- what a case types ------------------------------------------------------------------------------------------

Act = Callable[[AppTest], None]


Number = int | str  # what is typed into a number field: an int is typed as its digits


def create(name: str = "t", *, partitions: Number | None = None, rf: Number | None = None,
           fixed: Number | None = None, rows: list[dict] | None = None, assignment: str | None = None) -> Act:
    """Create topic: the name, then Kafka's placement (partitions, RF, start index) or an explicit assignment."""
    def act(at: AppTest) -> None:
        at.text_input(key="ct_name").input(name)
        if assignment is not None:
            at.radio(key="ct_placement").set_value("Explicit replica assignment").run()
            at.text_area(key="ct_assignment").input(assignment)
        for key, value in (("ct_partitions", partitions), ("ct_rf", rf), ("ct_fixed", fixed)):
            if value is not None:
                at.text_input(key=key).input(str(value))
        if rows:
            set_config_rows(at, "ct_config", rows)
        at.run()
    return act


def grow(total: Number, topic: str = "orders", now: int = 2) -> Act:
    """Topics -> the topic -> Add partitions: the new total."""
    def act(at: AppTest) -> None:
        at.selectbox(key="topic").select(topic).run()
        at.text_input(key=f"ap_total::{topic}::{now}").input(str(total)).run()
    return act


def option(key: str, text: str) -> Act:
    """Reassign (the default goal: rebalance every topic, whose plan offers Execute) -> a number field of the
    options row typed over."""
    def act(at: AppTest) -> None:
        assert write_button(at, "ra_execute") is not None, "the default plan alone offers no Execute"
        at.text_input(key=key).input(text).run()
    return act


def new_rf(text: str) -> Act:
    """Reassign -> Change replication factor of `orders`: 2 offers Execute, then `text` is typed instead."""
    def act(at: AppTest) -> None:
        at.radio(key="goal").set_value(plan_view.GOAL_RF).run()
        at.multiselect(key="ra_rf_topics").set_value(["orders"])
        at.text_input(key="ra_rf").input("2").run()
        assert write_button(at, "ra_execute") is not None, "RF 2 offers no Execute"
        at.text_input(key="ra_rf").input(text).run()
    return act


def open_topic(topic: str) -> Act:
    def act(at: AppTest) -> None:
        at.selectbox(key="topic").select(topic).run()
    return act


def configure(added: list[dict] = (), edited: dict | None = None, deleted: list[int] = (), topic: str = "orders"
              ) -> Act:
    """Topics -> the topic -> Edit config: rows added / edited / deleted in the overrides editor."""
    def act(at: AppTest) -> None:
        at.selectbox(key="topic").select(topic).run()
        editor = by_prefix(at.data_editor, f"cfg_edit::{topic}::")
        set_config_rows(at, editor.key, list(added), edited, list(deleted))
        at.run()
    return act


def import_text(text: str) -> Act:
    """Reassign -> Import a plan -> pasted."""
    def act(at: AppTest) -> None:
        at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
        at.text_area(key="ra_import_text").input(text).run()
    return act


def import_file(data: bytes, name: str = "plan.json") -> Act:
    """Reassign -> Import a plan -> uploaded."""
    def act(at: AppTest) -> None:
        at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
        at.file_uploader(key="ra_import_file").set_value((name, data, "application/json")).run()
    return act


def sizes_file(data: bytes) -> Act:
    """Reassign -> Import a plan (a valid one) -> partition sizes uploaded: bad sizes must block the plan."""
    def act(at: AppTest) -> None:
        at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
        at.text_area(key="ra_import_text").input(bad("reassign-orders-0.json").decode()).run()
        assert [b for b in at.button if b.key == "ra_execute"], "the valid plan alone offers no Execute"
        at.file_uploader(key="ra_sizes_file").set_value(("sizes.json", data, "application/json")).run()
    return act


def nothing(at: AppTest) -> None:
    pass


def generated(make: Callable[[ZkSession | None, Path], None]) -> bytes:
    """The bytes of a file the CLI corpus generates (its 50 MB inputs)."""
    with tempfile.TemporaryDirectory() as tmp:
        make(None, Path(tmp))
        return (Path(tmp) / "big.json").read_bytes()


def big_import(at: AppTest) -> None:
    import_file(generated(big_reassignment))(at)


def big_sizes(at: AppTest) -> None:
    sizes_file(generated(big_log_dirs))(at)


# --- setups: state in the cluster that makes an input bad ---------------------------------------------------------


def reassigning(zk: ZkSession) -> None:
    zk.create(zf.REASSIGN, b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3,1]}]}')


def gap(zk: ZkSession) -> None:
    write_topic(zk, "gap", {0: [1, 2], 2: [2, 3]})


# --- the table ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageCase:
    id: str
    page: str | None  # None: the router's default page
    act: Act
    expect: str  # a fragment of the message
    button: str | None  # the write button's key: absent or disabled
    alert: str = "error"  # the element the message is in
    toml: str | None = None  # keel.toml text ({zk}, {closed}: placeholders) instead of a good one
    setup: Callable[[ZkSession], None] | None = None
    click: bool = False  # the page offers the write; the click is refused (the engine re-validates the live state)
    xfail: str | None = None  # a defect found by the case (reported; strict)


def toml_case(id: str, toml: str, expect: str) -> PageCase:
    return PageCase(id, CREATE, nothing, expect, "ct_create", toml=toml)


BIG_ASSIGNMENT = "1:2:3," * 200_000  # 1.2 MB of text: more than a topic znode can hold
CASES: list[PageCase] = [
    # --- Create topic: names
    PageCase("create-name-empty", CREATE, create("   "), "Enter a topic name to see the placement", "ct_create",
             alert="info"),
    PageCase("create-name-dot", CREATE, create("."), "Topic name is invalid: '.' is not allowed", "ct_create"),
    PageCase("create-name-dotdot", CREATE, create(".."), "Topic name is invalid: '..' is not allowed", "ct_create"),
    PageCase("create-name-250-chars", CREATE, create("x" * 250), "is longer than the max allowed length 249",
             "ct_create"),
    PageCase("create-name-slash", CREATE, create("a/b"),
             "Topic name is invalid: 'a/b' contains one or more characters other than", "ct_create"),
    PageCase("create-name-collision", CREATE, create("a_b"), "Topic 'a_b' collides with existing topics: a.b",
             "ct_create"),
    PageCase("create-name-exists", CREATE, create(" orders "), "Topic 'orders' already exists.", "ct_create"),
    PageCase("create-name-internal", CREATE, create("__consumer_offsets"), "is a Kafka internal topic", "ct_create"),
    # --- Create topic: partitions, replication factor, start index
    PageCase("create-partitions-zero", CREATE, create(partitions=0), "The partitions must be greater than 0",
             "ct_create"),
    PageCase("create-partitions-negative", CREATE, create(partitions=-3), "The partitions must be greater than 0",
             "ct_create"),
    PageCase("create-partitions-10-million", CREATE, create(partitions=10_000_000),
             "10,000,000 partitions is more than Keel writes in one request (at most 20,000)", "ct_create"),
    # Fixed (was a strict xfail): st.number_input silently kept the previous value (6) for a number above 2**53 - 1
    # (JavaScript's MAX_SAFE_INTEGER); the text field passes it to the engine as typed.
    PageCase("create-partitions-10-to-the-20", CREATE, create(partitions=10 ** 20),
             "The partitions must be at most 2147483647", "ct_create"),
    PageCase("create-partitions-2-to-the-53-plus-1", CREATE, create(partitions=2 ** 53 + 1),
             "The partitions must be at most 2147483647", "ct_create"),
    PageCase("create-partitions-not-a-number", CREATE, create(partitions="six"),
             "Partitions must be a whole number, not 'six' (digits only, e.g. 12 or 20,000; ',' or '_' may group "
             "thousands)", "ct_create"),
    PageCase("create-partitions-decimal", CREATE, create(partitions="6.5"),
             "Partitions must be a whole number, not '6.5'", "ct_create"),
    PageCase("create-partitions-decimal-comma", CREATE, create(partitions="1,5"),
             "Partitions must be a whole number, not '1,5'", "ct_create"),
    PageCase("create-partitions-blank", CREATE, create(partitions="  "), "Partitions is empty: enter a whole number",
             "ct_create"),
    PageCase("create-partitions-other-digits", CREATE, create(partitions="١٢"),
             "Partitions must be a whole number, not '١٢'", "ct_create"),
    PageCase("create-partitions-1000-characters", CREATE, create(partitions="9" * 1000),
             "Partitions must be a whole number, not 1,000 characters of text", "ct_create"),
    PageCase("create-rf-zero", CREATE, create(rf=0), "The replication factor must be between 1 and 32767 inclusive",
             "ct_create"),
    PageCase("create-rf-negative", CREATE, create(rf=-1),
             "The replication factor must be between 1 and 32767 inclusive", "ct_create"),
    PageCase("create-rf-above-live-brokers", CREATE, create(rf=4), "Replication factor: 4 larger than available "
             "brokers: 3.", "ct_create"),
    PageCase("create-fixed-start-negative", CREATE, create(fixed=-5),
             "The fixed start index must be -1 (random) or at least 0, not -5", "ct_create"),
    PageCase("create-rf-10-to-the-20", CREATE, create(rf=10 ** 20),
             "The replication factor must be between 1 and 32767 inclusive", "ct_create"),
    PageCase("create-rf-not-a-number", CREATE, create(rf="three"),
             "Replication factor must be a whole number, not 'three'", "ct_create"),
    PageCase("create-rf-blank", CREATE, create(rf=""), "Replication factor is empty: enter a whole number",
             "ct_create"),
    PageCase("create-fixed-start-not-a-number", CREATE, create(fixed="random"),
             "Fixed start index must be a whole number, not 'random'", "ct_create"),
    PageCase("create-fixed-start-blank", CREATE, create(fixed=""), "Fixed start index is empty: enter a whole number",
             "ct_create"),
    # --- Create topic: configs
    PageCase("create-config-unknown-key", CREATE, create(rows=[{"Key": "foo.bar", "Value": "1"}]),
             "Unknown topic config name: foo.bar", "ct_create"),
    PageCase("create-config-wrong-type", CREATE, create(rows=[{"Key": "retention.ms", "Value": "abc"}]),
             "Invalid value abc for configuration retention.ms: Not a number of type LONG", "ct_create"),
    PageCase("create-config-out-of-range", CREATE, create(rows=[{"Key": "min.insync.replicas", "Value": "0"}]),
             "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1", "ct_create"),
    PageCase("create-config-bad-enum", CREATE, create(rows=[{"Key": "cleanup.policy", "Value": "purge"}]),
             "Invalid value purge for configuration cleanup.policy", "ct_create"),
    PageCase("create-config-twice", CREATE, create(rows=[{"Key": "retention.ms", "Value": "1000"},
                                                         {"Key": "retention.ms", "Value": "2000"}]),
             "retention.ms is set twice; keep one row per key", "ct_create"),
    PageCase("create-config-value-without-key", CREATE, create(rows=[{"Key": None, "Value": "1000"}]),
             "row 1 has the value '1000' but no key", "ct_create"),
    PageCase("create-config-min-isr-above-rf", CREATE,
             create(rf=2, rows=[{"Key": "min.insync.replicas", "Value": "3"}]),
             "min.insync.replicas=3 is above the replication factor 2 of topic t", "ct_create", alert="warning"),
    # --- Create topic: explicit replica assignments
    PageCase("create-assignment-duplicates", CREATE, create(assignment="1:1,2:3"),
             "Partition replica lists may not contain duplicate entries: 1", "ct_create"),
    PageCase("create-assignment-unknown-broker", CREATE, create(assignment="1:9,2:3"), "9", "ct_create"),
    PageCase("create-assignment-uneven-rf", CREATE, create(assignment="1:2,3"), "replication factor", "ct_create"),
    PageCase("create-assignment-garbage", CREATE, create(assignment="a:b"), "replica assignment", "ct_create"),
    PageCase("create-assignment-1MB", CREATE, create(assignment=BIG_ASSIGNMENT),
             "cannot fit ZooKeeper's 1 MiB request limit", "ct_create"),
    # --- Topics: Add partitions
    PageCase("grow-same-count", TOPICS, grow(2), "Topic already has 2 partitions.", "ap_apply"),
    PageCase("grow-decrease", TOPICS, grow(1), "Topic currently has 2 partitions, which is higher than the "
             "requested 1.", "ap_apply"),
    PageCase("grow-zero", TOPICS, grow(0), "which is higher than the requested 0.", "ap_apply"),
    PageCase("grow-negative", TOPICS, grow(-3), "which is higher than the requested -3.", "ap_apply"),
    PageCase("grow-10-million", TOPICS, grow(10_000_000), "more than Keel writes in one request", "ap_apply"),
    # Fixed (was a strict xfail): the widget dropped 10**20 and offered "Add 1 partition(s) to orders (2 → 3)".
    PageCase("grow-10-to-the-20", TOPICS, grow(10 ** 20), "The partitions must be at most 2147483647", "ap_apply"),
    PageCase("grow-2-to-the-53-plus-1", TOPICS, grow(2 ** 53 + 1), "The partitions must be at most 2147483647",
             "ap_apply"),
    # exactly what was typed reaches the engine (a JavaScript double would say -9007199254740992)
    PageCase("grow-minus-2-to-the-53-minus-1", TOPICS, grow(-(2 ** 53 + 1)),
             "Topic currently has 2 partitions, which is higher than the requested -9007199254740993.", "ap_apply"),
    PageCase("grow-not-a-number", TOPICS, grow("five"),
             "The new total number of partitions must be a whole number, not 'five'", "ap_apply"),
    PageCase("grow-decimal", TOPICS, grow("3.5"),
             "The new total number of partitions must be a whole number, not '3.5'", "ap_apply"),
    PageCase("grow-blank", TOPICS, grow(""), "The new total number of partitions is empty: enter a whole number",
             "ap_apply"),
    PageCase("grow-above-int-max", TOPICS, grow(2 ** 31), "The partitions must be at most 2147483647", "ap_apply"),
    PageCase("grow-while-reassigning", TOPICS, grow(4),
             "A partition reassignment is in progress for the topic 'orders'.", "ap_apply", setup=reassigning),
    PageCase("grow-topic-with-a-gap", TOPICS, grow(4, "gap"), "/brokers/topics/gap", "ap_apply", setup=gap),
    # --- Topics: the config editor
    PageCase("config-unknown-key", TOPICS, configure([{"Key": "foo.bar", "Value": "1"}]),
             "Unknown topic config name: foo.bar", "cfg_apply"),
    PageCase("config-wrong-type", TOPICS, configure([{"Key": "segment.bytes", "Value": "big"}]),
             "Invalid value big for configuration segment.bytes", "cfg_apply"),
    PageCase("config-long-overflow", TOPICS, configure([{"Key": "retention.ms", "Value": "9223372036854775808"}]),
             "Invalid value 9223372036854775808 for configuration retention.ms: Not a number of type LONG",
             "cfg_apply"),
    PageCase("config-out-of-range", TOPICS, configure([{"Key": "segment.bytes", "Value": "12"}]),
             "Value must be at least 14", "cfg_apply"),
    PageCase("config-bad-enum", TOPICS, configure([{"Key": "cleanup.policy", "Value": "purge"}]),
             "Invalid value purge for configuration cleanup.policy", "cfg_apply"),
    PageCase("config-edited-wrong-type", TOPICS, configure(edited={0: {"Value": "two"}}),
             "Invalid value two for configuration min.insync.replicas", "cfg_apply"),
    PageCase("config-lags-conflict", TOPICS, configure([{"Key": "min.compaction.lag.ms", "Value": "10"},
                                                        {"Key": "max.compaction.lag.ms", "Value": "5"}]),
             "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)", "cfg_apply"),
    PageCase("config-min-isr-above-rf", TOPICS, configure(edited={0: {"Value": "4"}}),
             "min.insync.replicas=4 is above the replication factor 3 of topic orders", "cfg_apply",
             alert="warning"),
    # --- Reassign: Import a plan
    PageCase("import-not-json", REASSIGN, import_file(bad("reassign-not-json.json")),
             "The input string is not a valid JSON", "ra_execute"),
    PageCase("import-version-2", REASSIGN, import_file(bad("reassign-version-2.json")),
             "Not supported version field value 2", "ra_execute"),
    PageCase("import-duplicate-partition", REASSIGN, import_text(bad("reassign-duplicate-partition.json").decode()),
             "Partition reassignment contains duplicate topic partitions: orders-0", "ra_execute"),
    PageCase("import-duplicate-replica", REASSIGN, import_text(bad("reassign-duplicate-replica.json").decode()),
             "orders-0 contains multiple entries for 2", "ra_execute"),
    PageCase("import-unknown-topic", REASSIGN, import_file(bad("reassign-unknown-topic.json")),
             "The proposed assignment contains non-existent partitions: nope-0", "ra_execute"),
    PageCase("import-no-such-partition", REASSIGN, import_text(bad("reassign-no-such-partition.json").decode()),
             "The proposed assignment contains non-existent partitions: orders-7", "ra_execute"),
    PageCase("import-empty-replicas", REASSIGN, import_file(bad("reassign-empty-replicas.json")),
             "Partition replica list cannot be empty", "ra_execute"),
    PageCase("import-unknown-broker", REASSIGN, import_text(bad("reassign-unknown-broker.json").decode()),
             "The proposed assignment contains non-existent brokerIDs: 9", "ra_execute"),
    PageCase("import-log-dirs-mismatch", REASSIGN, import_file(bad("reassign-log-dirs-mismatch.json")),
             "is different from size of log dirs list", "ra_execute"),
    PageCase("import-empty-list", REASSIGN, import_text(bad("reassign-empty-list.json").decode()),
             "Partition reassignment data file is empty", "ra_execute"),
    PageCase("import-partition-string", REASSIGN, import_text(bad("reassign-partition-string.json").decode()),
             '"partition" must be an integer', "ra_execute"),
    PageCase("import-top-level-array", REASSIGN, import_file(bad("reassign-top-level-array.json")),
             "must be a JSON object", "ra_execute"),
    PageCase("import-empty-file", REASSIGN, import_file(b""), "is empty", "ra_execute"),
    PageCase("import-not-utf8", REASSIGN, import_file(bad("reassign-not-utf8.json")), "not UTF-8", "ra_execute"),
    PageCase("import-50MB", REASSIGN, big_import,
             "The proposed assignment contains non-existent partitions: " + "missing" * 16 + "-0000000-0,",
             "ra_execute"),
    # a plan over a topic whose znode is corrupt (partitions 0 and 2): the page scores it and offers Execute;
    # the click is refused by core.zk.reassign_writes.execute, naming the znode (the page says nothing before the click)
    PageCase("import-gap-topic", REASSIGN, import_text(bad("reassign-gap-topic.json").decode()),
             "corrupt znode /brokers/topics/gap: partitions are not 0..n-1: missing 1; refusing to start a "
             "reassignment", "ra_execute", setup=gap, click=True),
    # --- Reassign: partition sizes (kafka-log-dirs --describe output)
    PageCase("sizes-not-json", REASSIGN, sizes_file(bad("log-dirs-not-json.json")), "log-dirs data", "ra_execute"),
    PageCase("sizes-bad-partition-name", REASSIGN, sizes_file(bad("log-dirs-bad-partition-name.json")),
             '"partition" must look like "<topic>-<number>"', "ra_execute"),
    PageCase("sizes-negative-size", REASSIGN, sizes_file(bad("log-dirs-negative-size.json")),
             '"size" must be a non-negative integer', "ra_execute"),
    PageCase("sizes-no-brokers", REASSIGN, sizes_file(bad("log-dirs-no-brokers.json")), '"brokers"', "ra_execute"),
    PageCase("sizes-50MB", REASSIGN, big_sizes, '"partition" must look like "<topic>-<number>"', "ra_execute"),
    # --- Reassign: the number fields (seed and throttle bounded by the page; the others by the engine)
    PageCase("options-seed-not-a-number", REASSIGN, option("ra_seed", "abc"),
             "Seed must be a whole number of 0 or more, not 'abc'", "ra_execute"),
    PageCase("options-seed-negative", REASSIGN, option("ra_seed", "-1"),
             "Seed must be a whole number of 0 or more, not -1", "ra_execute"),
    PageCase("options-seed-blank", REASSIGN, option("ra_seed", ""),
             "Seed is empty: enter a whole number of 0 or more", "ra_execute"),
    PageCase("options-max-moves-not-a-number", REASSIGN, option("ra_max_moves", "ten"),
             "Max moves must be a whole number, not 'ten'", "ra_execute"),
    PageCase("options-max-moves-negative", REASSIGN, option("ra_max_moves", "-1"),
             "the move budget must be 0 or more, got -1", "ra_execute"),
    PageCase("options-wave-k-decimal", REASSIGN, option("ra_wave_k", "1.5"),
             "Wave K must be a whole number, not '1.5'", "ra_execute"),
    PageCase("options-wave-k-zero", REASSIGN, option("ra_wave_k", "0"),
             "wave limits must be at least 1 partition and 1 replica move per broker", "ra_execute"),
    PageCase("options-wave-l-negative", REASSIGN, option("ra_wave_l", "-2"),
             "wave limits must be at least 1 partition and 1 replica move per broker", "ra_execute"),
    PageCase("options-wave-l-not-a-number", REASSIGN, option("ra_wave_l", "two"),
             "Wave L must be a whole number, not 'two'", "ra_execute"),
    PageCase("options-throttle-not-a-number", REASSIGN, option("ra_throttle", "fast"),
             "Throttle (MB/s) must be a number between 0.001 and 9,223,372,036,854, not 'fast'", "ra_execute"),
    PageCase("options-throttle-zero", REASSIGN, option("ra_throttle", "0"),
             "Throttle (MB/s) must be a number between 0.001 and 9,223,372,036,854, not 0", "ra_execute"),
    PageCase("options-throttle-negative", REASSIGN, option("ra_throttle", "-5"),
             "Throttle (MB/s) must be a number between 0.001 and 9,223,372,036,854, not -5", "ra_execute"),
    PageCase("options-throttle-blank", REASSIGN, option("ra_throttle", ""),
             "Throttle (MB/s) is empty: enter a number between 0.001 and 9,223,372,036,854", "ra_execute"),
    PageCase("options-throttle-above-a-long", REASSIGN, option("ra_throttle", "1e20"),
             "Throttle (MB/s) must be a number between 0.001 and 9,223,372,036,854, not 1e+20", "ra_execute"),
    PageCase("options-throttle-nan", REASSIGN, option("ra_throttle", "nan"),
             "Throttle (MB/s) must be a number between 0.001 and 9,223,372,036,854, not 'nan'", "ra_execute"),
    PageCase("options-throttle-decimal-comma", REASSIGN, option("ra_throttle", "12,5"),
             "',' separates thousands here: use '.' for decimals", "ra_execute"),
    PageCase("rf-not-a-number", REASSIGN, new_rf("two"), "Replication factor must be a whole number, not 'two'",
             "ra_execute"),
    PageCase("rf-blank", REASSIGN, new_rf(""), "Replication factor is empty: enter a whole number", "ra_execute"),
    PageCase("rf-zero", REASSIGN, new_rf("0"), "Replication factor must be larger than 0.", "ra_execute"),
    PageCase("rf-negative", REASSIGN, new_rf("-1"), "Replication factor must be larger than 0.", "ra_execute"),
    PageCase("rf-2-to-the-53-plus-1", REASSIGN, new_rf(str(2 ** 53 + 1)),
             "Replication factor: 9007199254740993 larger than available brokers: 3.", "ra_execute"),
    PageCase("rf-10-to-the-20", REASSIGN, new_rf(str(10 ** 20)),
             "Replication factor: 100000000000000000000 larger than available brokers: 3.", "ra_execute"),
    # --- keel.toml: the router shows the configuration error on every page
    toml_case("toml-bad-role", '[keel]\nrole = "superuser"\n\n[clusters.demo]\nzk = "{zk}"\n',
              'keel.role: must be "viewer", "operator" or "admin", got \'superuser\''),
    toml_case("toml-missing-zk", '[keel]\nrole = "admin"\n\n[clusters.demo]\ndescription = "no connect string"\n',
              "clusters.demo.zk: missing"),
    toml_case("toml-missing-tls-file", '[keel]\nrole = "admin"\n\n[clusters.demo]\nzk = "{zk}"\n'
              'tls = {{ ca = "certs/no-such-ca.pem" }}\n', "no-such-ca.pem"),
    toml_case("toml-not-toml", '[clusters.demo\nzk = 127.0.0.1:2181\n', "not valid TOML"),
    toml_case("toml-unknown-key", '[keel]\nrole = "admin"\n\n[clusters.demo]\nzk = "{zk}"\nzookeeper_timeout = 5\n',
              "zookeeper_timeout"),
    toml_case("toml-closed-port", '[keel]\nrole = "admin"\n\n[clusters.demo]\nzk = "127.0.0.1:{closed}"\n'
              'connect_timeout = 1\n', "ZooKeeper unreachable"),
    toml_case("toml-chroot-without-kafka", '[keel]\nrole = "admin"\n\n[clusters.demo]\nzk = "{zk}/no-kafka-here"\n'
              'connect_timeout = 5\n', "no Kafka brokers are registered under"),
]


# --- running a case --------------------------------------------------------------------------------------------------


@pytest.fixture
def tree(zk_connect):
    with ZkSession.open(zk_connect) as s:
        write_cluster(s, {1: "r1", 2: "r2", 3: "r3"}, controller=1)
        write_topic(s, "orders", {0: [1, 2, 3], 1: [2, 3, 1]}, config={"min.insync.replicas": "2"})
        write_topic(s, "a.b", {0: [1, 2]})
        s.ensure_path("/no-kafka-here")
        yield s


def write_button(at: AppTest, key: str):
    found = [b for b in at.button if b.key == key]
    assert len(found) <= 1
    return found[0] if found else None


def assert_no_write_offered(at: AppTest, key: str) -> None:
    button = write_button(at, key)
    assert button is None or button.disabled, f"{key} is enabled"


def tick_confirmations(at: AppTest) -> bool:
    """Tick every confirmation box the page offers (not a risk box) and rerun; False if there was none."""
    boxes = [b for b in at.checkbox if (b.key or "").startswith(CONFIRMS) and not b.disabled and not b.value]
    for b in boxes:
        b.check()
    if boxes:
        at.run()
    return bool(boxes)


def test_page_corpus_has_at_least_30_cases_with_unique_ids():
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("c", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=c.xfail)) if c.xfail
                               else c for c in CASES], ids=[c.id for c in CASES])
def test_bad_page_input(c: PageCase, tree: ZkSession, zk_connect, tmp_path, monkeypatch, store):
    if c.setup is not None:
        c.setup(tree)
    if c.toml is not None:
        path = tmp_path / "keel.toml"
        path.write_text(c.toml.format(zk=zk_connect, closed=free_port()))
        monkeypatch.setenv("KEEL_CONFIG", str(path))
    else:
        write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    before = dump_tree(tree)

    at = app().run()
    assert not at.exception, at.exception
    if c.page is not None:
        at.switch_page(c.page).run()
        assert not at.exception, at.exception
    c.act(at)
    assert not at.exception, at.exception
    if c.click:
        tick_confirmations(at)
        button = write_button(at, c.button)
        assert button is not None and not button.disabled, "the write the case clicks is not offered"
        button.click().run()
        assert not at.exception, at.exception

    shown = texts(getattr(at, c.alert))
    assert c.expect in shown, f"expected {c.expect!r} in the page's {c.alert}s:\n{shown[:2000]}\n" \
                              f"errors: {texts(at.error)[:2000]}"
    if c.alert != "error":
        assert not at.error, texts(at.error)
    if c.button is not None and not c.click:
        assert_no_write_offered(at, c.button)
        # tick every confirmation the page offers (not a risk box): still nothing to write
        if tick_confirmations(at):
            assert not at.exception, at.exception
            assert c.expect in texts(getattr(at, c.alert))
            assert_no_write_offered(at, c.button)

    assert dump_tree(tree) == before, "the ZooKeeper tree changed"
    assert store.actions() == [], store.actions()


# --- the happy path: what is typed is what is written ------------------------------------------------------------


def test_typed_numbers_reach_the_writes_exactly(tree: ZkSession, zk_connect, tmp_path, monkeypatch, store):
    """Spaces and thousands separators are read; the topic created, the total grown to and the throttle written are
    exactly the numbers typed. A garbled throttle while throttling is off blocks nothing (the field is disabled)."""
    write_config(tmp_path, monkeypatch, {"demo": {"zk": zk_connect}})
    at = app().run()
    at.switch_page(CREATE).run()
    at.text_input(key="ct_name").input("typed")
    at.text_input(key="ct_partitions").input(" 1,200 ")
    at.text_input(key="ct_rf").input("+2")
    at.text_input(key="ct_fixed").input("0").run()
    assert not at.exception and not at.error, texts(at.error)
    expected = draft_create_topic(live_connection("demo").snapshot(), "typed", 1200, 2, fixed_start_index=0)
    tick_confirmations(at)
    at.button(key="ct_create").click().run()
    assert not at.error, texts(at.error)
    assert written_assignment(tree, "typed") == expected.assignment and len(expected.assignment) == 1200

    at.switch_page(TOPICS).run()
    at.selectbox(key="topic").select("orders").run()
    at.text_input(key="ap_total::orders::2").input("2_000").run()
    assert not at.error, texts(at.error)
    tick_confirmations(at)
    at.button(key="ap_apply").click().run()
    assert not at.error, texts(at.error)
    assert sorted(written_assignment(tree, "orders")) == list(range(2000))

    at.switch_page(REASSIGN).run()
    at.radio(key="goal").set_value(plan_view.GOAL_IMPORT).run()
    at.text_area(key="ra_import_text").input(bad("reassign-orders-0.json").decode())
    at.text_input(key="ra_throttle").input(" 12.5 ").run()
    assert "12,500,000 bytes/s per broker (--throttle 12500000)" in texts(at.caption)
    at.text_input(key="ra_throttle").input("fast").run()
    assert "Throttle (MB/s) must be a number between 0.001" in texts(at.error)
    assert_no_write_offered(at, "ra_execute")
    at.toggle(key="ra_throttle_on").set_value(False).run()  # the field is disabled: its text is not used
    assert not at.error, texts(at.error)
    assert "Throttle: none." in texts(at.caption) and write_button(at, "ra_execute") is not None
    at.toggle(key="ra_throttle_on").set_value(True).run()
    assert "Throttle (MB/s) must be a number between 0.001" in texts(at.error)
    assert_no_write_offered(at, "ra_execute")
    at.text_input(key="ra_throttle").input("12.5").run()
    tick_confirmations(at)
    at.button(key="ra_execute").click().run()
    assert not at.error, texts(at.error)
    assert [a.kind for a in store.actions()] == ["reassignment", "add-partitions", "create-topic"]
    assert store.actions()[0].payload["throttle"] == 12_500_000
