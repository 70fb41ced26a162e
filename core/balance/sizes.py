"""Partition sizes from the JSON that `kafka-log-dirs.sh --describe` prints.

``{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/d","error":null,"partitions":[
{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}``

The tool prints two progress lines before the JSON ("Querying brokers for log directories information",
"Received log directory information from brokers 0,1,2"); pasting its whole output is accepted.
A partition's size is the largest of its replicas' sizes (a lagging follower holds less), future replicas
(`isFuture`, an intra-broker move in flight) are ignored, and a log dir with an error contributes nothing.
The same document comes from the Admin API when Keel can reach the brokers (core.kafka.admin.KafkaAdmin.log_dirs,
`plan --bootstrap-server`): `sizes_from_log_dirs` applies the same rules to both. Pure: no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import PlanError
from core.numbers import json_int

# A describe of every log dir of a large cluster is ~80 bytes a replica: 512 MiB covers ~6 million replicas.
MAX_LOG_DIRS_BYTES = 512 * 1024 * 1024

PartitionSizes = dict[tuple[str, int], int]


def parse_log_dirs(text: str | bytes) -> PartitionSizes:
    """(topic, partition) -> bytes."""
    return sizes_from_log_dirs(load_log_dirs_document(text))


def load_log_dirs_document(text: str | bytes, *, hint: str = "paste the output of kafka-log-dirs.sh --describe") -> Any:
    """The JSON document of `kafka-log-dirs.sh --describe` output (progress lines before it accepted), bounded in
    size and nesting; PlanError otherwise."""
    if len(text) > MAX_LOG_DIRS_BYTES:
        raise PlanError(f"log-dirs data is {len(text):,} bytes; the limit is {MAX_LOG_DIRS_BYTES // 2**20} MiB")
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    start = text.find("{")
    if start < 0:
        raise PlanError("log-dirs data holds no JSON object", hint=hint)
    try:
        return json.loads(text[start:], parse_int=json_int)
    except ValueError as e:
        raise PlanError(f"log-dirs data is not valid JSON: {e}") from None
    except RecursionError:  # thousands of nested arrays: Python's parser runs out of stack
        raise PlanError("log-dirs data is nested too deeply to be what kafka-log-dirs.sh prints") from None


def sizes_from_log_dirs(doc: Any) -> PartitionSizes:
    """(topic, partition) -> bytes from the decoded document (what `parse_log_dirs` reads, and what
    core.kafka builds from the Admin API's describeLogDirs, so both give sizes by the same rules)."""
    brokers = doc.get("brokers") if isinstance(doc, dict) else None
    if not isinstance(brokers, list):
        raise PlanError('log-dirs data must be an object with a "brokers" list')
    sizes: PartitionSizes = {}
    for i, broker in enumerate(brokers):
        for j, log_dir in enumerate(_list(broker, "logDirs", f"brokers[{i}]")):
            where = f"brokers[{i}].logDirs[{j}]"
            if not isinstance(log_dir, dict):
                raise PlanError(f"{where} must be an object")
            if log_dir.get("error") is not None:
                continue  # an offline dir reports no partitions worth trusting
            for k, replica in enumerate(_list(log_dir, "partitions", where)):
                _add(sizes, replica, f"{where}.partitions[{k}]")
    return sizes


def _add(sizes: PartitionSizes, replica: Any, where: str) -> None:
    if not isinstance(replica, dict):
        raise PlanError(f"{where} must be an object")
    if replica.get("isFuture") is True:
        return
    name, size = replica.get("partition"), replica.get("size")
    topic, dash, number = name.rpartition("-") if isinstance(name, str) else ("", "", "")
    if not (topic and dash and number.isascii() and number.isdigit()):
        raise PlanError(f'{where}: "partition" must look like "<topic>-<number>", got {json.dumps(name)}')
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise PlanError(f'{where}: "size" must be a non-negative integer, got {json.dumps(size)}')
    key = (topic, int(number))
    if size > sizes.get(key, -1):
        sizes[key] = size


def _list(obj: Any, key: str, where: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, list):
        raise PlanError(f'{where} must be an object with a "{key}" list')
    return value
