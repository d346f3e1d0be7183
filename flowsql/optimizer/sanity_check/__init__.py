"""The last physical pass: verify a finished physical plan before anything runs it.

The earlier passes each promise something; this pass recomputes the facts bottom-up,
independently of how the passes decided, and checks the promises:

* distribution (``parallelism.default`` > 1 and exchanges placed): every operator gets its
  input spread as it requires -- a hash join both inputs hashed on corresponding keys (or a
  side it may replicate broadcast), an aggregate and every keyed streaming operator its
  rows hashed on its keys, a sort or an unpartitioned window everything on one subtask --
  and the root hands its rows over from one subtask. A Top-N, LIMIT or aggregate directly
  below an exchange is a per-subtask partial step and needs nothing.
* boundedness (streaming plans): no blocking batch operator (sort, hash aggregate, hash or
  nested-loop join, Top-N, window, distinct set operation), which emits only at the end of
  its input, above an input that never ends.
* changelog mode (streaming plans): no updating input (+I/-U/+U/-D) into an operator or sink
  that accepts inserts only (window TVF, window and windowed aggregates, interval and window
  joins, OVER, Top-N / deduplication, LIMIT, append-only sinks).
* sources (batch plans): no changelog source (debezium-json, upsert-kafka), whose rows are
  changes a batch operator would take for inserts.
* ordering: a sort-merge join gets both inputs, a sort aggregate its input, sorted on its
  keys on every subtask.

A violation is a bug in a pass, reported as a PlanError naming the node and its path from
the root, instead of a wrong result or a query that never ends. ``distribution`` checks
the first promise, ``streaming`` the next two, ``ordering`` the last.
"""

from __future__ import annotations

from flowsql.optimizer.distribution import parallelism
from flowsql.optimizer.sanity_check.distribution import check_distribution
from flowsql.optimizer.sanity_check.ordering import check_ordering
from flowsql.optimizer.sanity_check.streaming import check_insert_only_sources, check_streaming
from flowsql.optimizer.search import runs_on_workers
from flowsql.planner.physical import PhysicalPlan

__all__ = ["sanity_check"]


def sanity_check(plan: PhysicalPlan, settings: dict[str, str], streaming: bool) -> None:
    """Raise PlanError naming the first node whose requirement ``plan`` does not meet."""
    # Spark distributes a bounded plan itself: exchanges are placed for the local engine only.
    # A batch plan without exchanges runs on one subtask in the session (the search chose
    # it), so there is no distribution to check.
    distributed = streaming or (settings.get("engine") != "spark" and runs_on_workers(plan))
    if distributed and parallelism(settings) > 1:
        check_distribution(plan)
    check_ordering(plan)
    if streaming:
        check_streaming(plan)
    else:
        check_insert_only_sources(plan)
