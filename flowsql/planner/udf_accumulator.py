"""The class form of a user-defined aggregate: an accumulator the engine feeds batches.

A class decorated with ``flowsql.udaf`` (Flink's ``AggregateFunction``, Spark's
``Aggregator``) defines:

* ``create_accumulator(self)`` -> a fresh accumulator (the state of one group);
* ``accumulate(self, acc, *arrays)``: add rows to ``acc``. Vectorized: one call per group
  and input batch, with one ``pyarrow.Array`` per argument holding that group's rows of
  the batch (all of the group's rows in a batch GROUP BY);
* ``get_value(self, acc)`` -> the group's value (a Python value, NumPy or Arrow scalar);
* optionally ``merge(self, acc, other)``: fold the accumulator ``other`` into ``acc``.
  With it the optimizer may split the aggregate into a partial step per subtask and a
  final step after the exchange, as for SUM;
* optionally ``retract(self, acc, *arrays)``: remove rows added before (same arrays as
  ``accumulate``). With it a streaming GROUP BY may feed the aggregate an updating input
  (a changelog); without it such a query is rejected when it is planned.

``accumulate``, ``retract`` and ``merge`` either update ``acc`` in place and return None,
or return the new accumulator (a non-None return value replaces ``acc``).

An accumulator is data: JSON values only (None, bool, int, float, str, lists, and dicts
with string keys), because the engine stores it in checkpoints and ships partial
accumulators between processes as JSON text -- never pickled code. A tuple comes back as a
list. The class is instantiated once per process without arguments; it must keep no state
of its own (every call gets the accumulator it concerns).

This module holds the parts every backend shares: checking a class at registration,
encoding accumulators, and running a whole group at once (what Spark and the one-step
batch aggregate do). The local runtime's calls with error reporting are in
``runtime.user_functions``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner.udf_loading import import_function

__all__ = ["OPTIONAL_METHODS", "REQUIRED_METHODS", "aggregate_group", "decode", "encode",
           "instance", "is_accumulator_class", "merge_all", "methods_of"]

REQUIRED_METHODS = ("create_accumulator", "accumulate", "get_value")
OPTIONAL_METHODS = ("merge", "retract")

_instances: dict[str, Any] = {}
_lock = threading.Lock()


def is_accumulator_class(obj: Any) -> bool:
    """Whether ``obj`` (what a function path imports as) is a class-form aggregate."""
    return isinstance(obj, type)


def methods_of(path: str, cls: type) -> tuple[bool, bool]:
    """(has merge, has retract) of the aggregate class at ``path``; CatalogError naming
    the path and the method when a required method is missing or not callable."""
    for name in REQUIRED_METHODS:
        if not callable(getattr(cls, name, None)):
            raise CatalogError(f"aggregate class '{path}' has no method {name}() (a class "
                               f"aggregate defines {', '.join(REQUIRED_METHODS)}, and "
                               f"optionally {' and '.join(OPTIONAL_METHODS)})")
    mergeable, retractable = (callable(getattr(cls, name, None)) for name in OPTIONAL_METHODS)
    return mergeable, retractable


def instance(path: str) -> Any:
    """The one instance per process of the aggregate class at ``path``."""
    found = _instances.get(path)
    if found is None:
        with _lock:
            found = _instances.get(path)
            if found is None:
                found = import_function(path)()
                _instances[path] = found
    return found


def updated(acc: Any, returned: Any) -> Any:
    """The accumulator after a call that returned ``returned`` (None: changed in place)."""
    return acc if returned is None else returned


def aggregate_group(aggregate: Any, arrays: Sequence[pa.Array]) -> Any:
    """The value of one group whose rows are ``arrays``: create, accumulate, get_value."""
    acc = aggregate.create_accumulator()
    if arrays and len(arrays[0]):  # accumulate is never called without rows
        acc = updated(acc, aggregate.accumulate(acc, *arrays))
    return aggregate.get_value(acc)


def merge_all(aggregate: Any, accumulators: Sequence[Any]) -> Any:
    """One accumulator holding everything ``accumulators`` hold (a fresh one for none)."""
    acc = aggregate.create_accumulator()
    for other in accumulators:
        acc = updated(acc, aggregate.merge(acc, other))
    return acc


def encode(acc: Any) -> str:
    """``acc`` as JSON text; TypeError/ValueError when it is not JSON data."""
    return json.dumps(acc, separators=(",", ":"))


def decode(text: str) -> Any:
    """The accumulator ``encode`` wrote."""
    return json.loads(text)
