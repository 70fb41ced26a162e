"""The write rates of `plan` (the write-rate goal, core.balance.rates): --rates FILE, or --sample-rates SECONDS[:N]
measured through the brokers (core.kafka.rates), optionally saved with --rates-output."""

from __future__ import annotations

import argparse
import json
import sys

from core.errors import ValidationError


def rates_of(args: argparse.Namespace):
    """Partition write rates from --rates FILE (checked before anything is asked of the cluster), or None; with
    --sample-rates, the interval and count are checked here and the sampling waits for the admin client."""
    from core.balance.rates import MAX_RATES_BYTES, parse_rates
    from core.cli.io import read_input

    if args.rates and args.sample_rates:
        raise ValidationError("give the write rates either from a file (--rates) or measured (--sample-rates), "
                              "not both")
    if args.sample_rates:
        from core.kafka.rates import check_sampling

        if not args.bootstrap_server:
            raise ValidationError("--sample-rates measures the growth of the log sizes, which only the brokers "
                                  "report (describeLogDirs): give --bootstrap-server HOST:PORT[,HOST:PORT]")
        check_sampling(*args.sample_rates)
    elif args.rates_output:
        raise ValidationError("--rates-output writes the rates measured by --sample-rates: give --sample-rates")
    if not args.rates:
        return None
    return parse_rates(read_input(args.rates, "--rates", limit=MAX_RATES_BYTES, what="rates",
                                  why="bytes/s of millions of partitions"))


def sample_rates_of(admin, args: argparse.Namespace):
    from core.cli.io import write_output
    from core.kafka.rates import sample_rates

    seconds, count = args.sample_rates
    print(f"measuring write rates: {count} samples of every broker's log sizes, {seconds:g} s apart ...",
          file=sys.stderr, flush=True)
    est = sample_rates(admin, seconds, count)
    notes = (f"; {len(est.dropped)} partition(s) shrank (retention deleted a segment): those intervals left out"
             if est.dropped else "") + (f"; {len(est.unmeasured)} without a rate (0 B/s)" if est.unmeasured else "")
    print(f"write rates of {len(est.rates)} partitions over {est.seconds:.1f} s: "
          f"{sum(est.rates.values()):,.0f} B/s in total{notes}", file=sys.stderr)
    if args.rates_output:
        write_output(args.rates_output, json.dumps(est.to_dict(), indent=2), "--rates-output")
    return est.rates


def sampling(text: str) -> tuple[float, int]:
    """SECONDS[:N] of --sample-rates (N defaults to 2)."""
    seconds, _, count = text.partition(":")
    try:
        return float(seconds), int(count) if count else 2
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SECONDS[:N], e.g. 30 or 10:4, got {text!r}") from None
