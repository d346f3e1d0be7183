"""Calls grouped for spilling by the PARTITION BY expressions they share."""

from __future__ import annotations

from flowsql.planner import types as T
from flowsql.planner.expressions import ColumnRef, WindowCall
from flowsql.runtime.operators.over.window_groups import partition_groups_of_calls


def _call(*keys: ColumnRef) -> WindowCall:
    return WindowCall("row_number", (), keys, (), None, T.INT64)


def test_calls_sharing_a_key_share_a_group_keyed_by_what_they_share() -> None:
    a, b, c = (ColumnRef(i, name, T.INT64) for i, name in ((1, "a"), (2, "b"), (3, "c")))
    calls = [_call(a, b), _call(c), _call(b), _call(c, a), _call(a), _call()]
    assert partition_groups_of_calls(calls) == [((b,), [0, 2]), ((c,), [1, 3]),
                                                ((a,), [4]), ((), [5])]
