"""What the write-ahead log costs the socket source: the scan operator alone (no job, no
exchanges) reads CSV lines a local server sends as fast as it can, to the end, with the
log off and on (a local checkpoint directory, a checkpoint and its completion every
second, so segments roll and are deleted as in a job). Runs alternate, each twice.

    python benchmarks/socket_source_wal.py [--lines 2000000]
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.socket_scan import SocketScanOperator


def _serve(listener: socket.socket, payload: bytes, done: threading.Event) -> None:
    connection, _ = listener.accept()
    with connection:
        connection.sendall(payload)
        done.wait()


def run(payload: bytes, lines: int, wal: bool) -> float:
    """Seconds to read every line."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    done = threading.Event()
    threading.Thread(target=_serve, args=(listener, payload, done), daemon=True).start()
    options = {"connector": "socket", "hostname": "127.0.0.1",
               "port": str(listener.getsockname()[1]), "format": "csv"}
    fields = (Field.fresh("id", T.INT64), Field.fresh("name", T.STRING))
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    operator = SocketScanOperator(TableScanExec(TableEntry("lines", schema, options), fields,
                                                (), float(lines)))
    settings = {"execution.runtime-mode": "streaming",
                "execution.checkpointing.interval": "1 s",
                "execution.checkpointing.dir": tempfile.mkdtemp(),
                "execution.source.wal.enabled": str(wal).lower()}
    operator.open(OperatorContext("socket", settings, job_id="bench", checkpointing=True,
                                  operator_id="scan"))
    rows, checkpoint = 0, 0
    start = last = time.perf_counter()
    while rows < lines:
        rows += sum(batch.num_rows for batch in operator.poll(0.05))
        if time.perf_counter() - last >= 1.0:
            checkpoint += 1
            operator.snapshot_state(checkpoint)
            operator.notify_checkpoint_complete(checkpoint)
            last = time.perf_counter()
    took = time.perf_counter() - start
    operator.close()
    done.set()
    listener.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    lines = parser.parse_args().lines
    payload = "".join(f"{i},name-{i % 1000}\n" for i in range(lines)).encode()
    for wal in (False, True, False, True):
        took = run(payload, lines, wal)
        print(f"log {'on ' if wal else 'off'}: {lines / took / 1e6:.2f} M lines/s, "
              f"{len(payload) / took / 2**20:.0f} MiB/s")


if __name__ == "__main__":
    main()
