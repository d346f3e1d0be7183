"""Rescaling an operator's state: a snapshot taken at one parallelism restores at another,
key groups and list state go where they belong, and ``pipeline.max-parallelism`` is fixed
for the life of the state.

For every keyed operator kind (``tests/harness/keyed_operators.py``) with many keys: one
subtask processes the input and snapshots; the snapshot is restored into 2 and into 4
subtasks as ``checkpoint.backends.restore`` does for another parallelism (each new
subtask's ``StateStore.restore`` gets every old subtask's tables, ``merge_snapshots``).
Every key's state must then be on exactly one subtask -- the one the exchange routes that
key to -- with nothing lost or duplicated; timers move with their key groups, and union list
state (progress: watermark, id counter) reaches every subtask. Restoring the 4 subtasks'
snapshots into 1 gives back the original state.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.partitioning import key_group_range
from flowsql.runtime.state.keyed_table import KEY_GROUP
from flowsql.runtime.state.store import StateStore, merge_snapshots
from tests.harness.keyed_operators import (
    KEYS,
    OPERATORS,
    Case,
    canonical,
    feed,
    open_operator,
    routing,
    stored_keys,
    table,
)

#: not the default (128): an operator that ignored the setting would show
MAX_PARALLELISM = 64
ROWS = 240


def _rows(state: pa.Table) -> Counter[tuple[Any, ...]]:
    """The rows of a state table as a multiset of comparable tuples."""
    columns = [canonical(state.column(i)) for i in range(state.num_columns)]
    return Counter(zip(*columns))


def _snapshot(case: Case, subtask: int, parallelism: int,
              restore: dict[str, pa.Table] | None) -> dict[str, pa.Table]:
    operator = open_operator(case, MAX_PARALLELISM, subtask, parallelism)
    if restore is None:
        feed(operator, case)
    else:
        operator.restore_state(restore)
    return operator.snapshot_state(1)


def _assert_placed(case: Case, snapshots: list[dict[str, pa.Table]]) -> int:
    """Every keyed row and timer of subtask ``i`` is in ``i``'s key groups, and every
    stored key is one the exchange routes to ``i``; returns the keyed rows checked."""
    parallelism = len(snapshots)
    routed = routing(case, parallelism, MAX_PARALLELISM)
    checked = 0
    for subtask, snapshot in enumerate(snapshots):
        owned = key_group_range(subtask, parallelism, MAX_PARALLELISM)
        for name, state in snapshot.items():
            if name.startswith("list/"):
                continue
            groups = state.column(KEY_GROUP).to_pylist()
            outside = sorted({g for g in groups if g not in owned})
            assert not outside, (f"subtask {subtask}/{parallelism}: {name} holds key groups "
                                 f"{outside} outside its range {owned}")
            if name.startswith("keyed/") and state.num_rows:
                keys = list(zip(*(canonical(c) for c in stored_keys(name, state, case))))
                wrong = {k: routed.get(k) for k in keys if routed.get(k) != subtask}
                assert not wrong, (f"subtask {subtask}/{parallelism}: {name} holds keys the "
                                   f"exchange routes elsewhere (key: subtask) {wrong}")
                checked += len(keys)
    return checked


def _keys_by_group(snapshot: dict[str, pa.Table]) -> dict[str, set[int]]:
    """Per keyed table, the key groups it holds rows in."""
    return {name: set(state.column(KEY_GROUP).to_pylist())
            for name, state in snapshot.items() if name.startswith("keyed/")}


def _assert_same_state(name: str, original: dict[str, pa.Table],
                       parts: list[dict[str, pa.Table]], what: str) -> None:
    """Keyed tables and timers of ``parts`` together are exactly ``original``'s (each row
    on one part); each part's list state holds exactly the original's entries."""
    for table_name, state in original.items():
        if table_name.startswith("list/"):
            for index, part in enumerate(parts):
                assert set(_rows(part[table_name])) == set(_rows(state)), (
                    f"{name} {what}: part {index} has other {table_name} entries")
            continue
        together: Counter[tuple[Any, ...]] = Counter()
        for part in parts:
            together.update(_rows(part[table_name]))
        assert together == _rows(state), f"{name} {what}: {table_name} differs"


@pytest.mark.parametrize("key", ["many", "many+str"])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_rescaled_state_lands_where_the_exchange_routes_its_keys(name: str, key: str) -> None:
    case = OPERATORS[name](table(7, ROWS), KEYS[key])
    taken = _snapshot(case, 0, 1, None)
    assert any(t.num_rows for n, t in taken.items() if n.startswith("keyed/")), \
        f"{name}: the input left no keyed state to rescale"
    # what a restore at the same parallelism holds: some operators compact state as they
    # restore it (a window aggregate merges the partials of one slice), which is per key
    single = _snapshot(case, 0, 1, merge_snapshots([taken]))
    assert _keys_by_group(single) == _keys_by_group(taken)
    for parallelism in (2, 4):
        merged = merge_snapshots([taken])
        parts = [_snapshot(case, subtask, parallelism, merged)
                 for subtask in range(parallelism)]
        assert _assert_placed(case, parts)
        _assert_same_state(name, single, parts, f"1 -> {parallelism}")
        if parallelism == 4:
            # several subtasks hold keys: the rescale really splits the state
            assert sum(any(t.num_rows for n, t in p.items() if n.startswith("keyed/"))
                       for p in parts) > 1
            back = _snapshot(case, 0, 1, merge_snapshots(parts))
            _assert_same_state(name, single, [back], "1 -> 4 -> 1")


# -- list state --------------------------------------------------------------------------------

_ENTRIES = pa.schema([("entry", pa.int64())])


def _list_snapshots(distribution: str, parallelism: int, entries_per_subtask: int
                    ) -> list[dict[str, pa.Table]]:
    snapshots = []
    for subtask in range(parallelism):
        store = StateStore(subtask, parallelism)
        state = store.list_state("positions", _ENTRIES, distribution)  # type: ignore[arg-type]
        first = subtask * entries_per_subtask
        state.update(pa.table({"entry": range(first, first + entries_per_subtask)},
                              schema=_ENTRIES))
        snapshots.append(store.snapshot())
    return snapshots


def _restored_lists(distribution: str, snapshots: list[dict[str, pa.Table]],
                    parallelism: int) -> list[list[int]]:
    merged = merge_snapshots(snapshots)
    out = []
    for subtask in range(parallelism):
        store = StateStore(subtask, parallelism)
        state = store.list_state("positions", _ENTRIES, distribution)  # type: ignore[arg-type]
        store.restore(merged)
        out.append(state.rows.column("entry").to_pylist())
    return out


@pytest.mark.parametrize(("old", "new"), [(1, 2), (1, 4), (4, 1), (2, 3), (3, 2)])
def test_split_list_state_is_spread_evenly_and_kept_once(old: int, new: int) -> None:
    """``split``: entry ``i`` of the concatenation goes to subtask ``i % parallelism``, so
    every entry lives on exactly one new subtask and the shares differ by at most one."""
    shares = _restored_lists("split", _list_snapshots("split", old, 5), new)
    everything = sorted(e for share in shares for e in share)
    assert everything == list(range(old * 5))
    sizes = [len(share) for share in shares]
    assert max(sizes) - min(sizes) <= 1
    assert shares == [list(range(old * 5))[subtask::new] for subtask in range(new)]


@pytest.mark.parametrize(("old", "new"), [(1, 2), (1, 4), (4, 1), (2, 3)])
def test_union_list_state_reaches_every_subtask_whole(old: int, new: int) -> None:
    """``union``: every new subtask gets every old subtask's entries (in subtask order)."""
    shares = _restored_lists("union", _list_snapshots("union", old, 3), new)
    assert shares == [list(range(old * 3))] * new


# -- the number of key groups is fixed for the life of the state -------------------------------

@pytest.mark.parametrize("state_kind", ["keyed", "timers"])
def test_state_written_with_another_max_parallelism_is_refused(state_kind: str) -> None:
    writer = StateStore(0, 1, 128)
    if state_kind == "keyed":
        writer.keyed_table("totals", pa.schema([("k", pa.string())]))
    else:
        writer.timers("windows")
    snapshot = writer.snapshot()
    reader = StateStore(0, 2, 64)
    if state_kind == "keyed":
        reader.keyed_table("totals", pa.schema([("k", pa.string())]))
    else:
        reader.timers("windows")
    with pytest.raises(ExecutionError) as failure:
        reader.restore(merge_snapshots([snapshot]))
    message = str(failure.value)
    assert "pipeline.max-parallelism 128" in message
    assert "pipeline.max-parallelism 64" in message
    assert "SET 'pipeline.max-parallelism' = '128'" in message


def test_an_operator_restored_with_another_max_parallelism_names_both_values() -> None:
    case = OPERATORS["group_aggregate"](table(7, ROWS), KEYS["many"])
    snapshot = _snapshot(case, 0, 1, None)
    operator = open_operator(case, 256)
    with pytest.raises(ExecutionError, match=rf"written with pipeline.max-parallelism "
                                             rf"{MAX_PARALLELISM} and cannot be restored with "
                                             r"pipeline.max-parallelism 256"):
        operator.restore_state(snapshot)
