"""Spark's cost constants, measured on this machine in Spark's local mode; run through
``calibrate_cost.py --engine spark``, which writes them to the ``spark`` entry of
``flowsql/optimizer/cost/constants.json`` (the ``local`` entry is kept).

The per-row and per-byte constants come from the same synthetic tables, the same queries
and the same subtractions as the local engine's (``calibrate_cost.cpu_constants``), run
through flowsql's Spark engine (``engine`` = ``spark``: our plan compiled to DataFrame
calls) on one SparkSession reused for every timing. Each query runs once untimed first
(the JVM compiles its code paths on first use), then the best of ``repeat`` runs counts.
Every figure includes collecting the result into Arrow in the Python process, as a query
of the Spark engine does.

Spark's own fixed costs, from the stages its jobs actually ran (counted by Spark's status
tracker, so adaptive execution's choices are included):

- ``stage``: what each extra shuffle stage adds, from a query over the tiny table with two
  more GROUP BYs (each on other keys, so each shuffles) than a plain ``count(*)``;
- ``parallel_job``: the time of that plain ``count(*)`` over the tiny table less its
  stages -- starting a query on Spark at all; never below ``SELECT 1``'s time;
- ``network_byte``: what a hash shuffle of the (k, v) columns of the big table adds to
  reading and summing them, less the stage it adds, per byte shuffled (16 per row);
  measured with the DataFrame API (``repartition``) on the same session, since SQL has no
  way to ask for a shuffle alone.

``spill_byte`` is not measured here (Spark spills inside its executors, which this script
cannot isolate); the value already in the file is kept.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from calibrate_cost import CPU_QUERIES, best, cpu_constants, positive, write_tables

import flowsql
from flowsql.optimizer.cost.constants import load_constants
from flowsql.spark.session import get_spark

#: the plain query over the tiny table: a job with the fewest stages
SIMPLE_SQL = "SELECT count(*) FROM s"
#: the same table through two more GROUP BYs on different keys: two more shuffles
STAGED_SQL = ("SELECT count(*) FROM (SELECT v, count(*) AS c FROM "
              "(SELECT k, v FROM s GROUP BY k, v) GROUP BY v)")


class StageCounter:
    """Counts the stages of the Spark jobs started since the last call (jobs outside any
    job group, which is how flowsql's Spark engine and plain DataFrame actions run)."""

    def __init__(self, spark: object) -> None:
        self.tracker = spark.sparkContext.statusTracker()  # type: ignore[attr-defined]
        self.seen = set(self.tracker.getJobIdsForGroup(None))

    def stages_since_last(self) -> int:
        jobs = set(self.tracker.getJobIdsForGroup(None)) - self.seen
        self.seen |= jobs
        infos = (self.tracker.getJobInfo(job) for job in jobs)
        return sum(len(info.stageIds) for info in infos if info is not None)


def warm_best(run: Callable[[], object], repeat: int) -> float:
    """The best of ``repeat`` timed runs after one untimed warm-up run."""
    run()
    return best(run, repeat)


def measure_spark(rows: int, repeat: int) -> dict[str, float]:
    """Spark's constants (see the module docstring) over ``rows`` synthetic rows."""
    from pyspark.sql import functions as F  # noqa: N812 (PySpark's own convention)

    with tempfile.TemporaryDirectory() as tmp:
        paths = write_tables(Path(tmp), rows)
        session = flowsql.connect()
        session.sql("SET 'engine'='spark'")
        for name, path in paths.items():
            session.sql(f"CREATE TABLE {name} WITH ('path'='{path}')")
        started = time.perf_counter()
        session.sql("SELECT 1").to_arrow()
        print(f"Spark session started in {time.perf_counter() - started:.1f} s", flush=True)
        spark = get_spark(session.settings)

        def q(sql: str) -> float:
            seconds = warm_best(lambda: session.sql(sql).to_arrow(), repeat)
            print(f"{seconds:8.3f} s  {sql}", flush=True)
            return seconds

        timings = {name: q(sql) for name, sql in CPU_QUERIES.items()}

        counter = StageCounter(spark)
        session.sql(SIMPLE_SQL).to_arrow()
        simple_stages = counter.stages_since_last()
        session.sql(STAGED_SQL).to_arrow()
        staged_stages = counter.stages_since_last()
        simple, staged = timings["tiny_count"], q(STAGED_SQL)

        columns = spark.read.parquet(str(paths["t"])).select("k", "v")
        sums = (F.sum("k"), F.sum("v"))
        plain = lambda: columns.agg(*sums).toArrow()  # noqa: E731
        shuffled = lambda: columns.repartition("k").agg(*sums).toArrow()  # noqa: E731
        counter.stages_since_last()  # forget the jobs timed above
        plain()
        plain_stages = counter.stages_since_last()
        shuffled()
        shuffle_stages = counter.stages_since_last()
        plain_time, shuffled_time = warm_best(plain, repeat), warm_best(shuffled, repeat)
        print(f"{plain_time:8.3f} s  sum(k), sum(v) over t ({plain_stages} stages)\n"
              f"{shuffled_time:8.3f} s  the same after a hash shuffle on k "
              f"({shuffle_stages} stages)", flush=True)
        session.close()

    extra = staged_stages - simple_stages
    print(f"stages: count(*) {simple_stages}, two more GROUP BYs {staged_stages}")
    stage = positive((staged - simple) / max(extra, 1))
    network = (shuffled_time - plain_time - stage * (shuffle_stages - plain_stages)) \
        / (rows * 16)
    return {
        **cpu_constants(timings, rows),
        "network_byte": positive(network),
        "spill_byte": load_constants("spark").spill_byte,
        # never below the cheapest query Spark runs at all
        "parallel_job": max(simple - simple_stages * stage, timings["one_row"]),
        "stage": stage,
    }
