"""Spark settings for tests: a local two-core master and few shuffle partitions, because
the test data is tiny and Spark's defaults (200 partitions) would make every query slow."""

from __future__ import annotations

SPARK_TEST_SETTINGS = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4",
                       "spark.default.parallelism": "2"}
