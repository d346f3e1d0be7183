"""The Spark backend: a bounded physical plan compiled to a PySpark DataFrame program.

Public interface:

- ``run_plan(plan, settings) -> pyarrow.Table`` runs the plan on a SparkSession
  (``spark.master`` default ``local[*]``; every ``spark.*`` setting passes to Spark);
- ``generate_pyspark_source(plan) -> str`` is the same program as standalone Python source
  (``EXPLAIN PYSPARK``); ``compile_plan`` executes exactly that text, so the two never
  disagree;
- ``pyspark_program(plan, settings) -> str`` is the program ``run_plan`` executes under
  those settings (``spark.broadcast-rows``), which ``EXPLAIN PYSPARK`` shows;
- ``compile_plan(plan, spark) -> DataFrame`` for callers holding their own session.

pyspark is imported only when a plan runs, so importing this package is cheap.
"""

from flowsql.spark.compiler import compile_plan, generate_pyspark_source
from flowsql.spark.run import pyspark_program, run_plan

__all__ = ["compile_plan", "generate_pyspark_source", "pyspark_program", "run_plan"]
