"""The ``socket`` connector, declared with the options of Flink's socket table source
(``hostname``, ``port``, ``byte-delimiter``, ``format``), so its DDL runs unchanged.

The source connects to ``hostname:port`` as a client and reads records separated by one
byte; each record is decoded by the table's format (the Kafka connector's ``json``,
``csv`` and ``raw`` formats, options spelled the same way). What the options do is
implemented in ``flowsql.runtime.operators.source.socket_scan``.
"""

from __future__ import annotations

from flowsql.planner.config.connector_model import Connector
from flowsql.planner.config.kafka import FORMATS as KAFKA_FORMATS
from flowsql.planner.config.values import DURATION, INTEGER, STRING, Option

SOCKET_FORMATS = tuple(f for f in KAFKA_FORMATS if f.name in ("json", "csv", "raw"))

SOCKET = Connector(
    "socket",
    "Records separated by a delimiter byte, read from a TCP server: an unbounded, "
    "non-parallel source (at parallelism > 1 only subtask 0 reads). It cannot rewind; with "
    "checkpointing on it writes what it receives to a write-ahead log first "
    "('execution.source.wal.enabled'), so a restore loses and repeats nothing it received.",
    source=True, sink=False,
    options=(
        Option("hostname", STRING, None, "Host of the server to read from.", required=True),
        Option("port", INTEGER, None, "Port of the server.", required=True, minimum=1,
               maximum=65535),
        Option("byte-delimiter", INTEGER, "10",
               "The byte that ends each record, as a number (10: a line break).",
               minimum=0, maximum=255),
        Option("format", STRING, "raw", "How a record's bytes become a row.",
               allowed=tuple(f.name for f in SOCKET_FORMATS)),
        Option("reconnect-timeout", DURATION, "30 s",
               "How long a refused or lost connection is retried (every 500 ms) before the "
               "source fails the job.", minimum=0),
    ),
    formats=SOCKET_FORMATS, format_option="format", unbounded=True)
