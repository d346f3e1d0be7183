"""An updating result written to upsert-kafka and read back: the topic's last record per key
is the key's final row, and the upsert-kafka source materializes to the same rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

import flowsql
from tests.harness.kafka_broker import DevBroker

EVENTS = [{"k": f"k{i % 3}", "v": i} for i in range(30)]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_group_by_into_upsert_kafka_and_back(kafka_broker: DevBroker,
                                             parallelism: int) -> None:
    source, target = f"ups_in{parallelism}", f"ups_out{parallelism}"
    kafka_broker.create_topic(source, 2)
    kafka_broker.create_topic(target, 2)
    kafka_broker.produce(source, [{"value": e, "partition": i % 2}
                                  for i, e in enumerate(EVENTS)])
    session: Any = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                      "parallelism.default": str(parallelism)})
    bootstrap = kafka_broker.bootstrap
    try:
        session.sql(f"""CREATE TABLE events (k STRING, v BIGINT) WITH ('connector' = 'kafka',
            'topic' = '{source}', 'format' = 'json', 'properties.bootstrap.servers' =
            '{bootstrap}', 'scan.startup.mode' = 'earliest-offset',
            'scan.bounded.mode' = 'latest-offset')""")
        session.sql(f"""CREATE TABLE totals (k STRING, n BIGINT, s BIGINT,
            PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',
            'topic' = '{target}', 'properties.bootstrap.servers' = '{bootstrap}',
            'key.format' = 'json', 'value.format' = 'json')""")
        job = session.sql("INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM events "
                          "GROUP BY k").job
        assert job.wait(60) == "FINISHED"
        expected = {f"k{r}": {"k": f"k{r}", "n": 10, "s": sum(range(r, 30, 3))}
                    for r in range(3)}
        last: dict[Any, Any] = {}
        for record in kafka_broker.read_all(target):
            last[record.key()] = record.value()
        assert {json.loads(k)["k"]: json.loads(v) for k, v in last.items()} == expected
        stream = session.sql("SELECT k, n, s FROM totals").stream()
        latest: dict[str, dict[str, Any]] = {}
        for batch in stream:
            for kind, k, n, s in zip(*(c.to_pylist() for c in batch.columns)):
                if kind in ("+I", "+U"):
                    latest[k] = {"k": k, "n": n, "s": s}
                elif kind == "-D":
                    latest.pop(k, None)
            if latest == expected:
                break
        stream.close()
        assert latest == expected
    finally:
        session.close()
