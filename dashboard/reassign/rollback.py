"""The Reassign page's choice of the rollback's throttle (drawn by the run panel, dashboard/reassign/run.py).

By default the rollback runs at the rate the reassignment ran with (core.zk.reassign_writes.RollbackThrottle, as the
CLI's `rollback` does without --throttle); the field changes it, typed in MB/s as Execute's throttle is, and read
exactly (core.numbers through dashboard.ui), and the toggle turns it off. The page says which rate the rollback will use.
"""

from __future__ import annotations

import streamlit as st

from core import writes as reassign_writes
from dashboard import actions, ui
from dashboard.reassign import plan_view
from dashboard.text import md

LONG_MAX_MB = (2**63 - 1) // plan_view.MB  # Kafka reads the rate as a Java long of bytes/s


def field_key(action_id: int) -> str:
    return f"ra_roll_throttle_{action_id}"


def throttle_choice(action_id: int, recorded: int | None, *, disabled: bool) -> reassign_writes.RollbackThrottle | None:
    """Draw the toggle and the rate of `action_id`'s rollback, defaulting to `recorded` (the rate the reassignment
    ran with; None: it ran unthrottled), and say what the rollback will use. None while the rate is not a number
    (its message is under the field)."""
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    below = st.container()
    on = row.toggle("Throttle the rollback", value=recorded is not None, key=f"ra_roll_throttle_on_{action_id}",
                    disabled=disabled,
                    help="Kafka's --throttle for the rollback: leader and follower replication rates on the brokers "
                         "involved, removed by Verify once complete. On by default when the reassignment was "
                         "throttled: the rollback moves the same bytes back.")
    default = recorded / plan_view.MB if recorded else plan_view.DEFAULT_THROTTLE_MB
    rate = ui.float_field("Rollback throttle (MB/s)", default, key=field_key(action_id), container=row,
                          errors=below, min=1 / plan_view.MB, max=LONG_MAX_MB, width=190, disabled=disabled or not on,
                          help=f"Default: the rate action #{action_id} ran with" if recorded else
                               f"Action #{action_id} ran unthrottled")
    if on and rate.value is None:
        return None
    # the default as typed is exactly the recorded rate (format_number reads back unchanged); others are rounded
    chosen = (None if not on else recorded if recorded and rate.value == default
              else int(round(rate.value * plan_view.MB)))
    choice = reassign_writes.RollbackThrottle(chosen, recorded, action_id)
    st.caption(f"Rollback: {md(choice.describe())}.")
    return choice


def confirmation(action_id: int, partitions: int, recorded: int | None, *,
                 disabled: bool) -> tuple[int | None, bool, actions.FormGuard]:
    """The throttle choice, then the confirmation of the rollback at that rate (keyed by it: a tick for one rate
    never confirms another). (The rate chosen, None: unthrottled; confirmed; the guard for the Roll back button.)"""
    choice = throttle_choice(action_id, recorded, disabled=disabled)
    rate = choice.rate if choice else None
    key = f"ra_roll_confirm_{actions.fingerprint(action_id, rate)}"
    # the confirmation on its own line, the button under it: a label in a column is cut at 900 px
    confirmed = st.checkbox(f"Restore the {partitions:,} partition(s) to their replicas before action #{action_id}"
                            + (f", {md(choice.describe())}" if choice else ""), key=key,
                            disabled=disabled or choice is None)
    return rate, confirmed and choice is not None, actions.guard(field_key(action_id), confirm=key)
