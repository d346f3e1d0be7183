"""The job graph of a statement set's shared read: one stage runs the table's scan and has
one ``forward`` output edge per leaf, each carrying the leaf's columns; deployment links
subtask i to subtask i only and splits the scan task's channels among its edges."""

from __future__ import annotations

import pyarrow as pa

from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical import ExchangeExec, TableScanExec
from flowsql.planner.physical_statement_set import ScanGroup, SharedScanExec, StatementSetExec
from flowsql.planner.schema import Field
from flowsql.runtime.jobgraph import StageInput, build_job_graph

TABLE = TableEntry("src", pa.schema([("id", pa.int64()), ("k", pa.string()),
                                     ("v", pa.int64())]), {"connector": "datagen"})
ID, K, V = (Field.fresh(n, t) for n, t in (("id", pa.int64()), ("k", pa.string()),
                                             ("v", pa.int64())))


def _plan() -> tuple[StatementSetExec, ScanGroup]:
    group = ScanGroup(TableScanExec(TABLE, (ID, K, V), (), 100.0), 2)
    first = SharedScanExec(group, 0, (V, ID), 100.0)
    second = SharedScanExec(group, 1, (K,), 100.0)
    gathered = [ExchangeExec(leaf, "gather", (), 100.0) for leaf in (first, second)]
    return StatementSetExec(tuple(gathered)), group


def test_the_scan_is_one_stage_with_a_forward_edge_per_leaf() -> None:
    plan, group = _plan()
    graph = build_job_graph(plan, 3)
    scans = [s for s in graph.stages if isinstance(s.plan, TableScanExec)]
    assert len(scans) == 1
    [scan] = scans
    assert scan.plan is group.scan and scan.parallelism == 3
    assert scan.operator_ids[0].startswith("source-")
    edges = [graph.edges[e] for e in scan.outputs]
    assert [e.kind for e in edges] == ["forward", "forward"]
    assert [e.columns for e in edges] == [(2, 0), (1,)]
    for edge in edges:
        reader = graph.stages[edge.target]
        assert reader.parallelism == 3
        assert isinstance(reader.plan, StageInput) and reader.plan.edge == edge.id
        assert edge.senders_per_receiver(scan.parallelism) == 1
    assert graph.root.parallelism == 1 and graph.root.output is None


def test_deployment_links_each_subtask_to_its_namesake() -> None:
    from flowsql.runtime.parallel.stage_deployment import deployment

    class _Cluster:
        workers = [object(), object(), object()]

    plan, _ = _plan()
    graph = build_job_graph(plan, 3)
    tasks, edges, _ = deployment(graph, {}, _Cluster(),  # type: ignore[arg-type]
                                 {"channel": "r", "host": "h", "port": 1})
    scan = next(s for s in graph.stages if isinstance(s.plan, TableScanExec))
    sent = [(e.source, e.target) for e in edges if e.source.startswith(f"{scan.name}[")]
    readers = [graph.stages[graph.edges[e].target].name for e in scan.outputs]
    assert sent == [(f"{scan.name}[{i}]", f"{reader}[{i}]")
                    for reader in readers for i in range(3)]
    config = next(t.config for t in tasks if t.name == scan.name)
    assert [o["receivers"] for o in config["outputs"]] == [1, 1]
    assert [o["columns"] for o in config["outputs"]] == [[2, 0], [1]]
