"""Every keyed streaming operator files a key's state under the key group the exchange
routes that key's rows by.

Rescaling hands key group ``g`` (state, timers) to the subtask ``split_batch_by_subtask``
sends the rows of ``g`` to; if an operator computed another key group for a key than the
exchange does, a rescaled restore would put the key's state on one subtask and its rows on
another, and the state would be silently lost. So for each keyed operator kind and each
key (every engine key type, NULLs, floats with -0.0 and NaN, dictionary
and decimal keys, several columns, keys computed by an expression) this test

* places the exchange the streaming distribution pass places in front of the operator and
  routes the input through the real ``Partitioner`` with ``parallelism == max_parallelism``,
  so the receiving subtask of a row *is* its key group;
* feeds the same input through the real operator, snapshots it, and checks that every row
  of every keyed state table carries the key group its key was routed to, and that every
  timer belongs to a key group that received rows.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from flowsql.planner import types as T
from flowsql.runtime.partitioning import key_groups
from flowsql.runtime.state.keyed_table import KEY_GROUP
from tests.harness.keyed_operators import (
    KEYS,
    OPERATORS,
    STRINGS,
    canonical,
    feed,
    open_operator,
    routing,
    stored_keys,
    table,
)

MAX_PARALLELISM = 16
FAST_KEYS = ["str", "f64", "dec", "null", "str+i32+null", "cast(dec as decimal(20,4))"]

# -- representations: what the engine casts must not move a key ----------------------------

_STORAGE_FORMS = {
    "large_string": pa.array(STRINGS, pa.large_string()),
    "string_view": pa.array(STRINGS, pa.string_view()),
    "dictionary": pa.array(STRINGS, pa.string()).dictionary_encode(),
    "large_binary": pa.array([None if v is None else v.encode() for v in STRINGS],
                             pa.large_binary()),
    "binary_view": pa.array([None if v is None else v.encode() for v in STRINGS],
                            pa.binary_view()),
    "timestamp_ns": pa.array([0, 1_000_000_123, -2_000_000_999, 1_700_000_000_123_456_789,
                              None], pa.timestamp("ns")),
}


@pytest.mark.parametrize("name", sorted(_STORAGE_FORMS))
def test_a_key_column_lands_in_the_key_group_of_its_engine_storage_form(name: str) -> None:
    """A scan hands the engine normalized columns, and operators cast keys to the engine's
    types (a join to the common key type): that cast must keep every key's key group."""
    column = _STORAGE_FORMS[name]
    normalized = pc.cast(column, T.normalize_storage_type(column.type), safe=False)
    assert not normalized.type.equals(column.type)
    assert (key_groups([column], MAX_PARALLELISM).tolist()
            == key_groups([normalized], MAX_PARALLELISM).tolist())


def _check(operator: str, key: str, seed: int = 0) -> None:
    rows = table(seed)
    joins_null_keys = operator.endswith("join") and "null" in key
    if operator == "regular_join" and not joins_null_keys:
        # a data column of type NULL trips the regular join's row identity (a limit of its
        # own, not of key groups); a NULL key is never stored by an inner join anyway
        rows = rows.drop_columns(["null"])
    case = OPERATORS[operator](rows, KEYS[key])
    # with as many subtasks as key groups, the receiving subtask is the key group
    routed = routing(case, MAX_PARALLELISM, MAX_PARALLELISM)
    instance = open_operator(case, MAX_PARALLELISM)
    feed(instance, case)
    checked = 0
    for name, state in instance.snapshot_state(1).items():
        groups = state.column(KEY_GROUP).to_pylist() if KEY_GROUP in state.column_names else []
        if name.startswith("timers/"):
            assert set(groups) <= set(routed.values()), (
                f"{name}: timers in key groups {sorted(set(groups) - set(routed.values()))} "
                "that received no rows")
            continue
        if not name.startswith("keyed/") or not state.num_rows:
            continue
        keys = list(zip(*(canonical(c) for c in stored_keys(name, state, case))))
        for stored_key, group in zip(keys, groups):
            assert stored_key in routed, f"{name}: key {stored_key} never went through the exchange"
            assert group == routed[stored_key], (
                f"{operator} keyed by {key}: state {name} files key {stored_key} under key "
                f"group {group}, the exchange routes it to key group {routed[stored_key]}")
            checked += 1
    # an inner join stores no row with a NULL key: those keys only test the exchange
    assert checked or joins_null_keys, f"{operator} keyed by {key}: no keyed state to check"


#: a session window cannot be keyed by a column of type NULL (its session merging compares
#: keys with ``equal``, which has no kernel for it): an operator limit, not a routing one
_UNSUPPORTED = {("session", key) for key in KEYS if "null" in key}


def _matrix(keys: list[str]) -> list[tuple[str, str]]:
    return [(operator, key) for operator in sorted(OPERATORS) for key in keys
            if (operator, key) not in _UNSUPPORTED]


@pytest.mark.parametrize(("operator", "key"), _matrix(FAST_KEYS))
def test_state_key_group_is_the_exchange_key_group(operator: str, key: str) -> None:
    _check(operator, key)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("operator", "key"), _matrix(sorted(set(KEYS) - set(FAST_KEYS))))
def test_state_key_group_is_the_exchange_key_group_for_every_key_type(
        operator: str, key: str, seed: int) -> None:
    _check(operator, key, seed)
