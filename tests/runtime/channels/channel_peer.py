"""A sending subtask in its own process, for the remote channel tests.

Usage: python channel_peer.py '<json spec>'. Sends ``batches`` batches of ``rows`` rows
(column ``seq`` numbers the rows globally, ``name`` is a dictionary column, ``tag`` a
string_view column), a Watermark after every ``watermark_every`` batches and a barrier in the
middle, then EndOfInput; prints its sender statistics as JSON.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pyarrow as pa

from flowsql.runtime.channels import BufferedWriter, ChannelSettings, RemoteOutputChannel
from flowsql.runtime.events import BarrierKind, CheckpointBarrier, Watermark


def batch(index: int, rows: int) -> pa.RecordBatch:
    seq = np.arange(index * rows, (index + 1) * rows, dtype=np.int64)
    names = pa.array([f"n{i % 3}" for i in range(rows)]).dictionary_encode()
    return pa.record_batch({"seq": seq, "name": names,
                            "tag": pa.array([f"t{index}"] * rows, pa.string_view())})


def main(spec: dict) -> None:
    channel = RemoteOutputChannel(spec["channel"], tuple(spec["address"]))
    writer = BufferedWriter(channel, ChannelSettings(buffer_timeout_ms=0))
    for index in range(spec["batches"]):
        writer.write(batch(index, spec["rows"]))
        if (index + 1) % spec["watermark_every"] == 0:
            writer.emit(Watermark(index))
        if index == spec["batches"] // 2:
            writer.emit(CheckpointBarrier(index, 1234, BarrierKind.SAVEPOINT))
    writer.finish()
    print(json.dumps({"blocked_sends": channel.blocked_sends,
                      "buffers_sent": writer.buffers_sent}))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
