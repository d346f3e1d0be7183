"""table.local-time-zone on the Spark engine: the zone bound into the plan gives the local
engine's results (tests/sql/test_local_time_zone.py checks those by hand) and the same
hand-checked values. One query per zone, since Spark is slow."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import flowsql
from tests.harness.spark import SPARK_TEST_SETTINGS
from tests.sql.test_local_time_zone import EPOCHS, QUERY, _expected_rows

EXTRA = """, CAST(TO_TIMESTAMP_LTZ(ms, 3) AS STRING) AS shown,
  UNIX_TIMESTAMP('2024-03-10 02:30:00') AS skipped,
  UNIX_TIMESTAMP('2024-11-03 01:30:00', 'yyyy-MM-dd HH:mm:ss') AS repeated,
  CAST(CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)) AS TIMESTAMP_LTZ(3)) AS round_trip_ltz
FROM t"""


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("local_time_zone_spark") / "t.parquet"
    pq.write_table(EPOCHS, file)
    return file


def _rows(path: Path, zone: str, engine: str) -> list[dict[str, object]]:
    settings = SPARK_TEST_SETTINGS if engine == "spark" else {}
    session = flowsql.connect(engine=engine, **{"table.local-time-zone": zone, **settings})
    session.sql(f"""CREATE TABLE t (id BIGINT, ms BIGINT)
                    WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    sql = QUERY.replace("\nFROM t", EXTRA)
    return sorted(session.sql(sql).to_arrow().to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "America/Los_Angeles"])
def test_spark_converts_in_the_session_zone(spark, path: Path, zone: str) -> None:  # type: ignore[no-untyped-def]
    local = _rows(path, zone, "local")
    remote = _rows(path, zone, "spark")
    assert remote == local
    expected = _expected_rows(zone)
    assert [{k: r[k] for k in expected[0]} for r in remote] == expected
