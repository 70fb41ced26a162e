"""`python -m core peek`: a partition's messages (the last N, from an offset, or from a time), as text.

Reading messages needs the `data` permission (core.policy.access.check_data) when keel.toml's [access] names the
command line (cli principals); every peek is recorded in the audit store with who, which partition and how many
messages, never their contents. The consumer joins no group and commits nothing (core.kafka.peek).
"""

from __future__ import annotations

import argparse
import json
import sys

from core.cli.argtypes import whole
from core.cli.common import add_store_option, UsageError, add_bootstrap_option, kafka_security, resolve_host
from core.errors import ValidationError


def cmd_peek(args: argparse.Namespace) -> int:
    from core import peek as model
    from core.audit.store import Store, default_actor
    from core.kafka import peek as reading
    from core.policy import access, gate
    from core.policy.config import ConfigError, load_cli_config

    if not args.bootstrap_server:
        raise UsageError("peek reads through the brokers: give --bootstrap-server HOST:PORT[,HOST:PORT]")
    req = model.request(args.topic, args.partition, last=args.last, offset=args.offset, from_time=args.from_time,
                        max_messages=args.max_messages, max_bytes=args.max_bytes)
    who = access.cli_identity(default_actor())
    store = Store(args.store)
    boot = args.bootstrap_server
    what = f"peek at {req.topic}-{req.partition}"
    try:
        config = load_cli_config()
    except ConfigError as e:  # a KEEL_CONFIG naming no file must not drop its [access] rules
        e.message += "; refusing to peek: keel.toml's [access] rules would not apply (nothing was read)"
        gate.refuse(who, e, gate.identify(None, bootstrap=boot, named=args.cluster, resolve=resolve_host), what,
                    store)
        raise
    try:
        target = gate.identify(config, bootstrap=boot, named=args.cluster, resolve=resolve_host)
    except ValidationError as e:  # --cluster names another cluster than --bootstrap-server reaches
        gate.refuse(who, e, gate.identify(None, bootstrap=boot, resolve=resolve_host), what, store)
        raise
    security = kafka_security(args)
    result = reading.peek(who, config, target, req, store=store,
                          reader=lambda r: reading.read(boot, r, security=security, timeout=args.kafka_timeout))
    if args.json:
        print(json.dumps({"topic": req.topic, "partition": req.partition, "earliest": result.earliest,
                          "latest": result.latest, "start": result.start, "stopped_by": result.stopped or None,
                          "truncated": result.truncated, "notes": list(result.notes),
                          "messages": model.rows(result.messages)}, indent=2, ensure_ascii=False))
    else:
        _print_text(model, result)
    return 0


def _print_text(model, result) -> None:
    req = result.request
    print(f"# {req.topic}-{req.partition}: offsets {result.earliest:,} to {result.latest - 1:,} "
          f"({max(result.latest - result.earliest, 0):,} messages)", file=sys.stderr)
    for row in model.rows(result.messages):
        print(f"--- offset {row['offset']}  {row['timestamp']} ({row['timestamp_type']})  {row['bytes']:,} bytes")
        for h in row["headers"]:
            print(f"header {h['key']}: {h['value']}")
        print(f"key ({row['key_format']}): {row['key']}")
        print(f"value ({row['value_format']}):")
        print(row["value"])
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if result.truncated:
        print(f"note: the last message was cut to --max-bytes {req.max_bytes:,}", file=sys.stderr)
    elif result.stopped:
        print(f"note: stopped at {result.stopped} (--max-messages / --max-bytes); read on with --offset "
              f"{result.messages[-1].offset + 1 if result.messages else result.start}", file=sys.stderr)
    print(f"# {result.summary()}", file=sys.stderr)


def register(sub) -> None:
    p = sub.add_parser("peek", help="a partition's messages as text (the last N, from an offset or a time); needs "
                                    "the data permission, audited")
    add_bootstrap_option(p, "Kafka's bootstrap servers: the messages are read from the partition's leader")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=whole, default=0, metavar="P", help="default 0")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--last", type=whole, metavar="N", help="the newest N messages")
    where.add_argument("--offset", type=whole, metavar="O", help="from offset O")
    where.add_argument("--from-time", metavar="ISO", help="from the first message at or after this time (ISO 8601, "
                                                         "UTC unless a zone is given; or ms since the epoch)")
    p.add_argument("--max-messages", type=whole, metavar="N", help="with --offset / --from-time: at most N messages "
                   "(default 20, at most 500)")
    p.add_argument("--max-bytes", type=whole, metavar="B", help="at most B bytes of keys, values and headers "
                                                               "(default 1 MiB, at most 16 MiB)")
    p.add_argument("--cluster", metavar="NAME", help="keel.toml's name of the cluster (else found by its address)")
    p.add_argument("--json", action="store_true", help="the messages as JSON (text fields, never bytes)")
    add_store_option(p)
    p.set_defaults(func=cmd_peek)
