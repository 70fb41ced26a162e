"""Names vulture (tests/test_dead_code.py) reports as unused in core/ and dashboard/ but that are kept, each with why.

Never imported: vulture reads this file as if it used every name below. Add an entry only with its reason; remove
the code instead when nothing needs it.
"""

_ = None  # vulture's placeholder for "an attribute of something"

# --- read by a library, not by our code ---------------------------------------------------------------------
_.row_factory  # core/audit/store.py: sqlite3 reads Connection.row_factory to build sqlite3.Row results
_.formatter_class  # core/cli/exits.py: argparse reads the parser's formatter_class to lay out --help
_.exc  # __exit__(self, exc_type, exc, tb) parameters: the context-manager protocol fixes the signature
_._controller_id  # core/kafka/admin.py: kafka-python's KafkaAdminClient reads it; None makes it find the controller

# --- dataclass fields serialized as a whole (dataclasses.asdict), so no attribute access names them -----------
_.stdev  # core/balance/metrics.py Distribution: in `plan --report` JSON (PlanResult.to_dict -> asdict(report))
_.partitions_changed  # MetricsReport: same JSON report
_.topic_skew_after  # MetricsReport: same JSON report (per topic, after the plan)
_.bytes_off_target  # MetricsReport: same JSON report
_.replicas_left_on_non_targets  # MetricsReport: same JSON report (and test_balance asserts it)
_.rows_total  # dashboard/fleet/charts.py Grid: rows before the top-N cut; test_dashboard_fleet checks the cut
_.usable_bytes  # core/kafka/logdirs.py LogDir: describeLogDirs v4's free space, read with total_bytes by admin.py

# --- zkformat knows every Kafka znode both ways (DESIGN: the only place that knows the JSON) -------------------
_.security_protocol  # BrokerRegistration: Kafka's EndPoint.createEndPoint rule; test_zkformat checks it
_.decode_config_change  # /config/changes notifications v1 and v2; test_zkformat decodes Kafka's own bytes
_.encode_migration  # /migration as Kafka writes it: tests write it to put a cluster in each migration phase
_.phase_key  # MigrationStatus: the phase's stable key for callers that compare phases (tests, scripts)
_.begun  # MigrationPhase: the migration has begun (every phase but "none"); the phase tests assert it

# --- used by tests to set up or observe what the product does -----------------------------------------------
_.with_state  # core/model.py Partition: tests build a partition whose state znode is missing
_.as_read  # core/model.py ClusterSnapshot: tests compare a live view with what a fresh read gives
_.polls  # core/kafka/poller.py PolledCluster: tests count polls to show an unchanged cluster keeps its snapshot
_.partition_health  # core/health.py: the per-partition rows as a list; test_health's oracle for the summary
_.principals  # core/policy/access.py AccessRules: test_auth_roles checks how a cluster's table merges
_.only_in_sync  # core/restarts.py: the partitions a broker is the only ISR member of; test_restarts checks it
_.resyncs  # core/zk/watcher.py LiveCluster: counts full re-reads; the outage tests assert none / one happened
_.spark_bin  # core/fleet/spark.py: the tests start spark-class / spark-submit from the pinned pyspark install
_.unescape  # dashboard/text.py: the inverse of md(); AppTests read page text back through it
_.by_broker  # core/kafka/logdirs.py LogDirs: test_log_dirs checks the Admin API read against the brokers' dirs
_.dir_bytes  # same
_.broker_bytes  # same

# --- fields of health's records that no page shows yet; test_health checks them against the per-partition rows --
_.isr_differs  # PartitionHealth / ClusterSummary: replica verification (kafka-replica-verification's question)
_.topics_pending_deletion  # ClusterSummary: topics under /admin/delete_topics
_.brokers_over_threshold  # ClusterSummary: brokers over the leader-imbalance threshold (test_dashboard_apptest's oracle)

# --- Kafka's TopicCommand predicates one by one (core/health.py's module doc); iter_partition_health inlines them
# --- for speed, and test_health checks the inlined loop against these readable definitions
_.is_under_replicated  # TopicCommand's --under-replicated-partitions
_.is_unavailable  # --unavailable-partitions
_.is_under_min_isr  # --under-min-isr-partitions
_.is_at_min_isr  # --at-min-isr-partitions
_.is_off_preferred_leader  # the controller's per-partition imbalance test

# --- issue 29's contract (SEC-SPEC.md): fields the pages and the CLI read, on branches merged after sec-core ---
_.by  # core/security/acls.py Decision: the bindings that decided (a principal's "through which binding")
_.denied  # core/security/acls.py Access: the DENY bindings on a resource (a topic's "who may" section)

# --- issue 31 (started): the fleet store's capture history, written by `fleet collect --every` / `--history` ---
_.read_history  # core/fleet/store.py: read by tests/fleet/test_fleet_collect.py; the Fleet page's history (next)
