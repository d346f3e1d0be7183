"""Stable key hashing, key groups and batch splitting.

The golden values pin the hash function: if they change, every checkpoint ever written
would map its keyed state to the wrong subtasks, so a change here is a format break.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.partitioning import (
    NULL_HASH,
    hash_array,
    hash_columns,
    key_group_range,
    key_groups,
    split_batch_by_subtask,
    subtask_for_key_group,
)

GOLDEN_INPUTS = textwrap.dedent("""
    import datetime, decimal
    import pyarrow as pa
    INPUTS = {
        "int32": pa.array([0, 1, -1, 2**31 - 1, None], pa.int32()),
        "int64": pa.array([0, 1, -1, 2**62, None], pa.int64()),
        "decimal": pa.array([decimal.Decimal("0.00"), decimal.Decimal("1.50"),
                             decimal.Decimal("-12345678.99"), None], pa.decimal128(15, 2)),
        "date": pa.array([datetime.date(1970, 1, 1), datetime.date(1998, 12, 1), None],
                         pa.date32()),
        "string": pa.array(["", "a", "Customer#000000001", "héllo wörld", None]),
        "float": pa.array([0.0, 1.5, -2.25, None]),
    }
""")

GOLDEN = {
    "int32": [13258805574571075079, 14641387471877365332, 15646958350009268986,
              5337020601802728235, 7640891576956012809],
    "int64": [13258805574571075079, 14641387471877365332, 15646958350009268986,
              15989172661750416139, 7640891576956012809],
    "decimal": [17620399542040172880, 45104810144904514, 6321624071927608657,
                7640891576956012809],
    "date": [13258805574571075079, 2161987402325006732, 7640891576956012809],
    "string": [9758185389214012293, 1417709889120201812, 1560469963885679016,
               14287884199695164924, 7640891576956012809],
    "float": [13258805574571075079, 10747770878729536002, 1473573280967939104,
              7640891576956012809],
}


def _golden_inputs() -> dict[str, pa.Array]:
    namespace: dict[str, object] = {}
    exec(GOLDEN_INPUTS, namespace)
    return namespace["INPUTS"]  # type: ignore[return-value]


def test_hash_matches_golden_values_in_this_process() -> None:
    for name, array in _golden_inputs().items():
        assert hash_array(array).tolist() == GOLDEN[name], name


def test_hash_matches_golden_values_in_a_fresh_process() -> None:
    # A fresh interpreter has a different hash() salt: the key hash must not care.
    script = GOLDEN_INPUTS + textwrap.dedent("""
        import json
        from flowsql.runtime.partitioning import hash_array
        print(json.dumps({k: [int(h) for h in hash_array(v)] for k, v in INPUTS.items()}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=60, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert json.loads(out.stdout) == GOLDEN


def test_null_has_the_fixed_hash_for_every_type() -> None:
    for array in _golden_inputs().values():
        assert hash_array(array)[-1] == NULL_HASH
    assert hash_array(pa.nulls(3)).tolist() == [int(NULL_HASH)] * 3


def test_equal_values_hash_equal_across_representations() -> None:
    ints = [5, -7, 0, None, 2**31 - 1]
    expected = hash_array(pa.array(ints, pa.int64()))
    for t in (pa.int32(), pa.int64()):
        assert (hash_array(pa.array(ints, t)) == expected).all()
    assert (hash_array(pa.array([5, 0], pa.int8())) == expected[[0, 2]]).all()
    assert (hash_array(pa.array([5, 0], pa.uint16())) == expected[[0, 2]]).all()
    strings = ["x", "", None, "a somewhat longer string value", "ümlaut"]
    expected = hash_array(pa.array(strings))
    for t in (pa.large_string(), pa.string_view()):
        assert (hash_array(pa.array(strings, t)) == expected).all()
    assert (hash_array(pa.array(strings).dictionary_encode()) == expected).all()
    assert (hash_array(pa.chunked_array([strings[:2], strings[2:]])) == expected).all()
    floats = hash_array(pa.array([0.0, -0.0, float("nan"), -float("nan")]))
    assert floats[0] == floats[1] and floats[2] == floats[3]
    assert (hash_array(pa.array([1.5], pa.float32())) == hash_array(pa.array([1.5]))).all()


def test_sliced_arrays_hash_their_own_values() -> None:
    for array in _golden_inputs().values():
        assert (hash_array(array.slice(1)) == hash_array(array)[1:]).all()
        assert (hash_array(array.slice(1, 2)) == hash_array(array)[1:3]).all()


def test_strings_that_differ_only_in_padding_or_order_differ() -> None:
    values = ["", "\x00", "\x00\x00", "ab", "ba", "abcdefgh", "abcdefgh\x00", "abcdefghab",
              "abcdefghba", "b" * 64, "b" * 65]
    assert len(set(hash_array(pa.array(values)).tolist())) == len(values)


def test_multi_column_keys_are_order_sensitive() -> None:
    a, b = pa.array([1, 2]), pa.array([2, 1])
    ab = hash_columns([a, b])
    assert ab[0] != ab[1]
    assert (hash_columns([a, b]) != hash_columns([b, a])).all()
    assert (hash_columns([a]) == hash_array(a)).all()
    with pytest.raises(ExecutionError):
        hash_columns([])


def test_decimal_and_date_keys_distinguish_values() -> None:
    decimals = pa.array([decimal.Decimal(f"{i}.25") for i in range(-500, 500)],
                        pa.decimal128(15, 2))
    dates = pa.array([datetime.date(1992, 1, 1) + datetime.timedelta(days=i)
                      for i in range(1000)], pa.date32())
    for array in (decimals, dates):
        assert len(set(hash_array(array).tolist())) == len(array)


@pytest.mark.parametrize("kind", ["int", "string", "decimal"])
def test_key_groups_are_roughly_uniform(kind: str) -> None:
    n, max_parallelism = 128_000, 128
    if kind == "int":
        keys = pa.array(np.arange(n, dtype=np.int64))
    elif kind == "string":
        keys = pa.array([f"Customer#{i:09d}" for i in range(n)])
    else:
        keys = pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(15, 2))
    groups = key_groups([keys], max_parallelism)
    assert groups.min() >= 0 and groups.max() < max_parallelism
    counts = np.bincount(groups, minlength=max_parallelism)
    mean = n / max_parallelism  # 1000 per group; a random hash has a std of about 32
    assert counts.min() > 0.8 * mean and counts.max() < 1.2 * mean


def test_key_group_ranges_invert_the_subtask_assignment() -> None:
    for max_parallelism in (1, 7, 128):
        for parallelism in {1, 2, 3, max_parallelism}:
            if parallelism > max_parallelism:
                continue
            owned = [key_group_range(s, parallelism, max_parallelism)
                     for s in range(parallelism)]
            assert [kg for r in owned for kg in r] == list(range(max_parallelism))
            groups = np.arange(max_parallelism)
            subtasks = subtask_for_key_group(groups, parallelism, max_parallelism)
            for s, r in enumerate(owned):
                assert set(np.flatnonzero(subtasks == s).tolist()) == set(r)
    with pytest.raises(ExecutionError, match="parallelism 5"):
        subtask_for_key_group(0, 5, 4)


def test_split_batch_by_subtask_routes_each_key_to_its_subtask_in_order() -> None:
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 50, 2000)
    batch = pa.record_batch({"k": pa.array(keys), "s": pa.array([f"v{k}" for k in keys]),
                             "seq": pa.array(np.arange(2000))})
    parallelism, max_parallelism = 3, 128
    parts = split_batch_by_subtask(batch, [0, 1], parallelism, max_parallelism)
    assert len(parts) == parallelism
    assert sum(p.num_rows for p in parts) == batch.num_rows
    seen = set()
    for subtask, part in enumerate(parts):
        groups = key_groups([part.column(0), part.column(1)], max_parallelism)
        assert (groups * parallelism // max_parallelism == subtask).all()
        seq = part.column(2).to_numpy()
        assert (np.diff(seq) > 0).all()  # relative order preserved
        seen.update(seq.tolist())
    assert seen == set(range(2000))
    assert split_batch_by_subtask(batch, [0], 1, 128) == [batch]


def test_split_of_an_empty_batch_gives_empty_parts() -> None:
    batch = pa.record_batch({"k": pa.array([], pa.int64())})
    parts = split_batch_by_subtask(batch, [0], 4, 16)
    assert [p.num_rows for p in parts] == [0, 0, 0, 0]


def test_unsupported_key_type_raises_a_clear_error() -> None:
    with pytest.raises(ExecutionError, match="cannot partition by a key of type list"):
        hash_array(pa.array([[1], [2]]))
