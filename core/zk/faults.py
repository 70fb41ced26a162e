"""Fault-injection points for tests that kill a real Keel process at a chosen moment.

`pause(point)` is called by ZkSession.multi right before a write is committed ("before-multi") and right after
it succeeded ("after-multi"). With the environment variable KEEL_TEST_PAUSE_BEFORE_WRITE (or
KEEL_TEST_PAUSE_AFTER_WRITE) set to a number of seconds, the process announces the point on stderr
(`keel-test-pause: before-multi`) and sleeps, so a test can SIGKILL it there. Unset (always, outside tests),
it does nothing.
"""

from __future__ import annotations

import os
import sys
import time

ENV = {"before-multi": "KEEL_TEST_PAUSE_BEFORE_WRITE", "after-multi": "KEEL_TEST_PAUSE_AFTER_WRITE"}
MARKER = "keel-test-pause:"


def pause(point: str) -> None:
    value = os.environ.get(ENV.get(point, ""), "").strip()
    if not value:
        return
    try:
        seconds = float(value)
    except ValueError:
        return
    print(f"{MARKER} {point}", file=sys.stderr, flush=True)
    time.sleep(seconds)
