"""The savepoint compatibility verdicts and state schema migration, without a job."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from flowsql.runtime.checkpoint.compatibility import (
    DROPPED,
    INCOMPATIBLE,
    MIGRATED,
    NEW,
    RESTORED,
    SavedState,
    judge,
    refusal,
    report_table,
    report_text,
)
from flowsql.runtime.state.keyed_table import KeyedTableState
from flowsql.runtime.state.migration import compare, conform

GROUPS = pa.schema([("k0", pa.int64()), ("count(*)", pa.int64())])
WITH_SUM = pa.schema([*GROUPS, ("sum(v)_sum", pa.int64()), ("sum(v)_n", pa.int64())])
DEFAULTS = {"count(*)": 0, "sum(v)_sum": None, "sum(v)_n": 0}


def _declared(schema: pa.Schema, defaults: dict[str, object] | None = None) -> pa.Schema:
    """The schema of an empty snapshot table, as a freshly opened operator gives it."""
    return KeyedTableState("groups", schema, 128, defaults).snapshot().schema


def _saved(schema: pa.Schema, rows: int = 3) -> SavedState:
    return SavedState(_declared(schema), rows)


def test_an_unchanged_state_is_restored() -> None:
    verdicts = judge({"agg": {"keyed/groups": _declared(GROUPS, DEFAULTS)}},
                     {"agg": {"keyed/groups": _saved(GROUPS)}})
    assert [(v.verdict, v.detail, v.rows) for v in verdicts] == [(RESTORED, "", 3)]
    assert refusal(verdicts, ignore_unclaimed=False) is None


def test_added_columns_with_defaults_migrate() -> None:
    verdicts = judge({"agg": {"keyed/groups": _declared(WITH_SUM, DEFAULTS)}},
                     {"agg": {"keyed/groups": _saved(GROUPS)}})
    assert [(v.verdict, v.detail) for v in verdicts] == [
        (MIGRATED, "+sum(v)_sum (starts at NULL), +sum(v)_n (starts at 0)")]
    assert refusal(verdicts, ignore_unclaimed=False) is None


def test_added_columns_without_defaults_are_incompatible_whatever_is_allowed() -> None:
    verdicts = judge({"agg": {"keyed/groups": _declared(WITH_SUM)}},
                     {"agg": {"keyed/groups": _saved(GROUPS)}})
    assert verdicts[0].verdict == INCOMPATIBLE
    reason = refusal(verdicts, ignore_unclaimed=True)
    assert reason is not None and "+sum(v)_sum (no value for existing keys)" in reason


def test_a_changed_column_type_is_incompatible() -> None:
    retyped = pa.schema([("k0", pa.int32()), ("count(*)", pa.int64())])
    verdicts = judge({"agg": {"keyed/groups": _declared(retyped, DEFAULTS)}},
                     {"agg": {"keyed/groups": _saved(GROUPS)}})
    assert (verdicts[0].verdict, verdicts[0].detail) == (INCOMPATIBLE, "k0: int64 -> int32")


def test_removed_columns_and_dropped_states_need_permission_unless_empty() -> None:
    declared = {"agg": {"keyed/groups": _declared(GROUPS, DEFAULTS)}, "src": None}
    saved = {"agg": {"keyed/groups": _saved(WITH_SUM), "keyed/values max(v)": _saved(GROUPS)},
             "src": {"list/position": _saved(GROUPS, 1)},
             "gone": {"keyed/rows": _saved(GROUPS, 0)}}
    verdicts = judge(declared, saved)
    assert [(v.operator_id, v.state, v.verdict) for v in verdicts] == [
        ("agg", "keyed/groups", MIGRATED), ("agg", "keyed/values max(v)", DROPPED),
        ("src", "list/position", RESTORED), ("gone", "keyed/rows", DROPPED)]
    reason = refusal(verdicts, ignore_unclaimed=False)
    assert reason is not None
    assert "agg keyed/groups (3 rows): -sum(v)_sum, -sum(v)_n" in reason
    assert "agg keyed/values max(v) (3 rows)" in reason
    assert "gone" not in reason  # it held no rows: dropping it loses nothing
    assert refusal(verdicts, ignore_unclaimed=True) is None


def test_new_states_start_empty_and_the_report_lists_everything() -> None:
    verdicts = judge({"agg": {"keyed/groups": _declared(GROUPS)}, "sink": None}, {})
    table = report_table(verdicts)
    assert table.to_pylist() == [
        {"operator": "agg", "state": "keyed/groups", "verdict": NEW, "rows": 0,
         "detail": "starts empty"},
        {"operator": "sink", "state": "*", "verdict": NEW, "rows": 0,
         "detail": "not in the savepoint"}]


def test_the_report_text_is_aligned_and_cuts_nothing() -> None:
    verdicts = judge({"agg": {"keyed/groups": _declared(WITH_SUM, DEFAULTS)}},
                     {"agg": {"keyed/groups": _saved(GROUPS, 12)}})
    assert report_text(verdicts).split("\n") == [
        "operator | state        | verdict  | rows | detail",
        "---------+--------------+----------+------+-------",
        "agg      | keyed/groups | migrated |   12 | "
        "+sum(v)_sum (starts at NULL), +sum(v)_n (starts at 0)"]


def test_compare_and_conform_carry_a_table_over() -> None:
    change = compare(GROUPS, WITH_SUM, DEFAULTS)
    assert change.added == ("sum(v)_sum", "sum(v)_n") and change.compatible
    old = pa.table({"k0": [1, 2], "count(*)": [5, 7]})
    new = conform(old, WITH_SUM, DEFAULTS)
    assert new.schema.equals(WITH_SUM)
    assert new.to_pylist() == [
        {"k0": 1, "count(*)": 5, "sum(v)_sum": None, "sum(v)_n": 0},
        {"k0": 2, "count(*)": 7, "sum(v)_sum": None, "sum(v)_n": 0}]
    assert compare(WITH_SUM, GROUPS, None).removed == ("sum(v)_sum", "sum(v)_n")
    with pytest.raises(ValueError, match="no migration default"):
        conform(old, WITH_SUM, None)


def test_a_keyed_table_restores_an_older_snapshot_with_its_defaults() -> None:
    before = KeyedTableState("groups", GROUPS, 128, DEFAULTS)
    keys = pa.array([10, 11], pa.int64())
    groups = before.key_groups_of([keys], 2)
    before.replace(pa.table({"__key_group": pa.array(groups, pa.int32()), "k0": keys,
                             "count(*)": [3, 4]}))
    after = KeyedTableState("groups", WITH_SUM, 128, DEFAULTS)
    after.restore(before.snapshot())
    assert after.rows.drop_columns(["__key_group"]).to_pylist() == [
        {"k0": 10, "count(*)": 3, "sum(v)_sum": None, "sum(v)_n": 0},
        {"k0": 11, "count(*)": 4, "sum(v)_sum": None, "sum(v)_n": 0}]
    assert np.array_equal(after.rows.column("__key_group").to_numpy(), groups)
