"""An upsert topic read as a changelog (the upsert-kafka source; Flink's ChangelogNormalize).

A record with a value is the key's new row, a tombstone (no value) deletes the key. To emit
proper changes, the last value of every key is kept: the first value of a key is ``+I``, a
later one ``-U`` (the old row) then ``+U`` (the new one), a tombstone ``-D`` with the old
row; a tombstone of an unknown key and a value equal to the current one change nothing.

A key always lands in the same partition (producers partition by key), so the last values
are kept per partition, in the source subtask that owns the partition: no shuffle is
needed, and when partitions move to other subtasks (a rescaled restore) their values move
with them. The work is one dict operation per record (payloads stay encoded bytes; the
caller decodes the emitted payloads as a batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from flowsql.runtime.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE

#: checkpointed form: one row per live key
STATE_SCHEMA = pa.schema([pa.field("topic", pa.string(), nullable=False),
                          pa.field("partition", pa.int32(), nullable=False),
                          pa.field("key", pa.binary(), nullable=False),
                          pa.field("value", pa.binary(), nullable=False)])


@dataclass(frozen=True)
class Changes:
    """The changes a batch of records makes: per output row its key and value payloads,
    row kind, and the index of the record it comes from."""

    keys: list[bytes]
    values: list[bytes]
    kinds: np.ndarray
    records: np.ndarray


class UpsertChangelog:
    """Last value per (split, key); splits are indexes into the caller's split list."""

    def __init__(self) -> None:
        self._latest: list[dict[bytes, bytes]] = []

    def add_split(self) -> None:
        self._latest.append({})

    def apply(self, splits: Sequence[int], keys: Sequence[bytes | None],
              values: Sequence[bytes | None]) -> Changes:
        out_keys: list[bytes] = []
        out_values: list[bytes] = []
        kinds: list[int] = []
        records: list[int] = []
        for index, (split, key, value) in enumerate(zip(splits, keys, values)):
            if key is None:
                continue  # a record without a key has no identity; Flink drops it too
            latest = self._latest[split]
            old = latest.get(key)
            if value is None:
                if old is not None:
                    del latest[key]
                    out_keys.append(key)
                    out_values.append(old)
                    kinds.append(DELETE)
                    records.append(index)
                continue
            if old == value:
                continue
            latest[key] = value
            if old is None:
                out_keys.append(key)
                out_values.append(value)
                kinds.append(INSERT)
                records.append(index)
            else:
                out_keys += [key, key]
                out_values += [old, value]
                kinds += [UPDATE_BEFORE, UPDATE_AFTER]
                records += [index, index]
        return Changes(out_keys, out_values, np.array(kinds, dtype=np.int8),
                       np.array(records, dtype=np.int64))

    def snapshot(self, names: Sequence[tuple[str, int]]) -> pa.Table:
        """The live keys of every split, ``names[i]`` being split i's (topic, partition)."""
        topics: list[str] = []
        partitions: list[int] = []
        keys: list[bytes] = []
        values: list[bytes] = []
        for (topic, partition), latest in zip(names, self._latest):
            topics += [topic] * len(latest)
            partitions += [partition] * len(latest)
            keys += latest.keys()
            values += latest.values()
        return pa.table([pa.array(topics, pa.string()), pa.array(partitions, pa.int32()),
                         pa.array(keys, pa.binary()), pa.array(values, pa.binary())],
                        schema=STATE_SCHEMA)

    def restore(self, split: int, keys: Sequence[bytes], values: Sequence[bytes]) -> None:
        self._latest[split] = dict(zip(keys, values))
