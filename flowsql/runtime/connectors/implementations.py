"""Connector name -> what the runtime does for it: the one place the runtime knows names.

What a connector *is* (options, roles, boundedness, formats) is declared in
``flowsql.planner.config.connectors``; this dict holds what it *does*: describe a new table
(schema, normalized options, statistics), read it (scan operator, and the operator a
parallel subtask uses to read its share of a bounded table), write it (a
:class:`~flowsql.runtime.connectors.sinks.TableSink`). A role a connector does not declare
has no entry (None). Implementations are imported on first use, so a batch query does not
pay for streaming operators or sinks.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry, TableStatistics
from flowsql.planner.config.connectors import FILESYSTEM
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.operator import Operator, OperatorContext

if TYPE_CHECKING:
    from flowsql.runtime.connectors.sinks import TableSink

#: (declared columns or None, validated options) -> (schema, options to store, statistics)
Describe = Callable[[pa.Schema | None, dict[str, str]],
                    tuple[pa.Schema, dict[str, str], TableStatistics]]


@dataclass(frozen=True)
class ConnectorImplementation:
    """``describe`` runs at CREATE TABLE; ``check`` (optional) then vets the whole entry
    (metadata columns and primary key included) and raises CatalogError for a table the
    connector cannot serve; ``scan`` makes the operator reading a table; ``split_scan``
    (optional) the one a parallel subtask uses to read its share of the table (None: the
    table is not split, ``scan`` is used); ``sink`` opens a writer."""

    describe: Describe
    scan: Callable[[TableScanExec], Operator] | None = None
    split_scan: Callable[[TableScanExec], Operator | None] | None = None
    sink: Callable[[TableEntry, OperatorContext], TableSink] | None = None
    check: Callable[[TableEntry], None] | None = None


def _lazy(module: str, name: str) -> Callable[..., Any]:
    def create(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    return create


def _declared(schema: pa.Schema | None, options: dict[str, str]
              ) -> tuple[pa.Schema, dict[str, str], TableStatistics]:
    assert schema is not None  # the declaration requires a column list
    return schema, options, TableStatistics()


def _describe_files(schema: pa.Schema | None, options: dict[str, str]
                    ) -> tuple[pa.Schema, dict[str, str], TableStatistics]:
    from flowsql.runtime.connectors.filesystem import infer_schema, table_statistics

    options = {**options, "path": os.path.abspath(os.path.expanduser(options["path"]))}
    if schema is None:
        schema = infer_schema(options)
    return schema, options, table_statistics(options, schema)


def _describe_datagen(schema: pa.Schema | None, options: dict[str, str]
                      ) -> tuple[pa.Schema, dict[str, str], TableStatistics]:
    """Validated now (bad options fail the DDL, not the first query)."""
    from flowsql.runtime.connectors.datagen import DatagenTable

    assert schema is not None  # the declaration requires a column list
    return schema, options, TableStatistics(row_count=DatagenTable(schema, options).total_rows)


def _watched(options: dict[str, str]) -> bool:
    return FILESYSTEM.unbounded_with in options


def _scan_files(node: TableScanExec) -> Operator:
    if _watched(node.table.options):
        return _lazy("flowsql.runtime.operators.source.watched_scan", "WatchedScanOperator")(node)
    return _lazy("flowsql.runtime.operators.source.table_scan", "ScanOperator")(node)  # type: ignore[no-any-return]


def _split_files(node: TableScanExec) -> Operator | None:
    if _watched(node.table.options):
        return None  # a watched directory is split by file name inside the operator
    return _lazy("flowsql.runtime.parallel.split_scan", "SplitScanOperator")(node)  # type: ignore[no-any-return]


_SINKS = "flowsql.runtime.connectors.sinks"
_KAFKA = ConnectorImplementation(
    _declared, scan=_lazy("flowsql.runtime.operators.source.kafka_scan", "KafkaScanOperator"),
    sink=_lazy("flowsql.runtime.connectors.kafka.sink", "KafkaSink"),
    check=_lazy("flowsql.runtime.connectors.kafka.table_check", "check_kafka_table"))

_SOCKET_SCAN = "flowsql.runtime.operators.source.socket_scan"


def _describe_nexmark(schema: pa.Schema | None, options: dict[str, str]
                      ) -> tuple[pa.Schema, dict[str, str], TableStatistics]:
    """Validated now: the columns must be the chosen kind's."""
    from flowsql.runtime.connectors.nexmark import NexmarkTable

    assert schema is not None  # the declaration requires a column list
    return schema, options, TableStatistics(row_count=NexmarkTable(schema, options).row_count)

IMPLEMENTATIONS: dict[str, ConnectorImplementation] = {
    "filesystem": ConnectorImplementation(
        _describe_files, scan=_scan_files, split_scan=_split_files,
        sink=_lazy(f"{_SINKS}.filesystem", "FileSink")),
    "datagen": ConnectorImplementation(
        _describe_datagen, scan=_lazy("flowsql.runtime.operators.source.datagen_scan",
                                      "DatagenScanOperator")),
    "print": ConnectorImplementation(_declared, sink=_lazy(f"{_SINKS}.print_sink", "PrintSink")),
    "blackhole": ConnectorImplementation(
        _declared, sink=lambda table, context: _lazy(f"{_SINKS}.blackhole",
                                                     "BlackholeSink")()),
    "kafka": _KAFKA,
    "upsert-kafka": _KAFKA,
    "socket": ConnectorImplementation(
        _declared, scan=_lazy(_SOCKET_SCAN, "SocketScanOperator"),
        check=_lazy(_SOCKET_SCAN, "check_socket_table")),
    "nexmark": ConnectorImplementation(
        _describe_nexmark, scan=_lazy("flowsql.runtime.operators.source.nexmark_scan",
                                      "NexmarkScanOperator")),
}


def implementation(table: TableEntry) -> ConnectorImplementation:
    """The implementation of ``table``'s connector."""
    found = IMPLEMENTATIONS.get(table.connector.lower())
    if found is None:
        raise ExecutionError(f"table '{table.name}': no implementation of connector "
                             f"'{table.connector}'")
    return found


def scan_operator(node: TableScanExec) -> Operator:
    """The operator reading ``node``'s table; an error for a sink-only connector."""
    scan = implementation(node.table).scan
    if scan is None:
        raise ExecutionError(f"table '{node.table.name}' ({node.table.connector} connector) "
                             "can only be written to (INSERT INTO), not read")
    return scan(node)


def split_scan_operator(node: TableScanExec) -> Operator | None:
    """The operator reading a parallel subtask's share of ``node``'s table, or None when
    the connector does not split its tables (the subtask uses ``scan_operator``)."""
    split = implementation(node.table).split_scan
    return None if split is None else split(node)
