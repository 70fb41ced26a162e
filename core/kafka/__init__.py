"""Kafka's Admin API: what only the brokers know (log dirs and partition sizes, running reassignments, cancel).

`core.kafka.admin` is the ONLY importer of kafka-python (as core/zk is of kazoo); its exceptions become
KafkaAdminError (a KeelError) there. This package's __init__ and `bootstrap` / `logdirs` are pure, so that
`core.policy.config` can validate a `bootstrap` list without loading the client: import the client from
`core.kafka.admin` where it is used.
"""

from core.kafka.bootstrap import parse_bootstrap
from core.kafka.logdirs import LogDir, LogDirs, Replica

__all__ = ["parse_bootstrap", "LogDir", "LogDirs", "Replica"]
