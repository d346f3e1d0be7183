"""Judging a Kafka sink's output after kill -9 on the test broker.

The exactly-once sink's transactions are short (records are produced only when a checkpoint
completes), but a kill can still land inside one. Kafka then aborts the cut transaction when
the next attempt initializes the same transactional id, and read_committed consumers never
see its records. The test broker (``tansu``) neither hides nor resolves it: a read_committed
consumer stops at the cut transaction, and a read_uncommitted one shows its records beside
the copies the recovery committed again. That outcome says nothing about the sink, so a kill
test that meets it runs again with other kill times; every outcome is still checked for what
would be a bug anywhere: a lost record, or a record no run produces.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

#: runs of a kill test before it gives up waiting for kills outside a sink's commit
ATTEMPTS = 3


def exactly_once(expected: Counter[Any], committed: Counter[Any],
                 everything: Counter[Any]) -> bool:
    """True when the committed output (read_committed) is exactly ``expected``; False when
    it differs only as the test broker makes it differ after a kill inside a sink's commit
    (see the module docstring); AssertionError for anything else. ``everything`` is the
    topic read with read_uncommitted."""
    if committed == expected:
        return True
    missing = expected - everything
    assert not missing, f"{sum(missing.values())} records lost, e.g. {next(iter(missing))}"
    foreign = set(everything) - set(expected)
    assert not foreign, f"records no run produces, e.g. {next(iter(foreign))}"
    return False
