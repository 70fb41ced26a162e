"""Typed errors of the fleet store and the fleet jobs (all KeelError, so the CLI exits 1 and the page shows st.error)."""

from __future__ import annotations

from core.errors import KeelError, ValidationError


class FleetInputError(ValidationError):
    """The input of a fleet command is missing, empty or not a Keel fleet store; nothing was written."""


class FleetSchemaError(FleetInputError):
    """A Parquet file of the fleet store does not have the store's schema (or is not Parquet at all)."""

    def __init__(self, path: str, problems: list[str] | str):
        problems = [problems] if isinstance(problems, str) else list(problems)
        shown = "; ".join(problems[:6]) + (f"; and {len(problems) - 6} more" if len(problems) > 6 else "")
        super().__init__(f"{path}: not a Keel fleet file: {shown}")
        self.path = path
        self.problems = problems


class FleetOutputError(ValidationError):
    """The output directory cannot be used (it holds something that is not Keel's, or overlaps the input)."""


class SparkError(KeelError):
    """Spark could not be started or a fleet job failed; the output directory was left as it was."""


class JavaMissingError(SparkError):
    """No usable Java runtime: Spark needs Java 17 or newer."""


class SparkMasterUnreachableError(SparkError):
    """The Spark master URL cannot be reached, or the master granted no executors in time."""


class FleetJobError(SparkError):
    """A Spark action of a fleet job failed."""
