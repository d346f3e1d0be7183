"""The one SparkSession of the process: created on first use, reused afterwards.

A JVM-backed SparkSession takes seconds to start, so it lives as long as the process.
Settings keyed ``spark.*`` pass through to the builder unchanged (``spark.master`` picks the
master, default ``local[*]``); settings that only flowsql reads (``spark.broadcast-rows``)
are kept out of Spark's configuration. When the session already exists, Spark applies only
runtime SQL settings (``spark.sql.*``); static ones (master, memory) need a new process.

Before the first start the Java runtime is checked, because a missing or too old Java makes
PySpark fail with a long, confusing launcher error.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import setting
from flowsql.spark.errors import first_line
from flowsql.spark.start_output import quiet_start

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_JAVA = 17
#: ``spark.master`` when it is not set (its declared default)
DEFAULT_MASTER = str(setting("spark.master").default)
# Settings read by flowsql itself, never handed to Spark.
FLOWSQL_SETTINGS = frozenset({"spark.broadcast-rows"})
# Quiet, deterministic defaults; any of them can be overridden by a setting of the same key.
DEFAULT_CONFIG: dict[str, str] = {
    "spark.app.name": "flowsql",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "FATAL",
    # Keeps log4j's start-up chatter off the user's terminal (read at JVM start).
    "spark.driver.extraJavaOptions":
        f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties')}",
    "spark.sql.session.timeZone": "UTC",
}
# PySpark logs every analysis error as a JSON record before raising it; we report the error
# ourselves (one line), so these loggers are silenced.
_NOISY_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")


def get_spark(settings: Mapping[str, str] | None = None) -> SparkSession:
    """The process's SparkSession, configured from ``settings`` (keys ``spark.*``)."""
    settings = dict(settings or {})
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        raise ExecutionError("the Spark engine needs pyspark (pip install 'pyspark>=4')") from None
    if SparkContext._active_spark_context is None:  # noqa: SLF001 - the only public probe
        check_java()
        # Spark picks a non-loopback address and says so on every start; local mode needs
        # nothing but the loopback interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python workers (user-defined functions) need this interpreter's packages
        # (pyarrow, flowsql), not whichever python is first on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    config = {**DEFAULT_CONFIG, **{k: v for k, v in settings.items()
                                   if k.startswith("spark.") and k not in FLOWSQL_SETTINGS}}
    builder = SparkSession.builder.master(config.pop("spark.master", DEFAULT_MASTER))
    for key, value in sorted(config.items()):
        builder = builder.config(key, value)
    try:
        # the JVM's start-up notices and logs go to the Spark log, never into a result
        starting = quiet_start() if SparkContext._active_spark_context is None \
            else contextlib.nullcontext()  # noqa: SLF001
        with starting, warnings.catch_warnings():
            # pandas/pyarrow version notices and "existing session" notices are not errors.
            warnings.simplefilter("ignore")
            spark = builder.getOrCreate()
    except Exception as e:
        raise ExecutionError(f"the Spark engine failed to start: {first_line(e)}") from None
    _silence_pyspark_loggers()
    return spark


def check_java() -> None:
    """Raise ExecutionError unless a Java runtime >= 17 is available to PySpark."""
    java = _java_executable()
    if java is None:
        raise ExecutionError(f"the Spark engine needs Java {MIN_JAVA} "
                             "(java not found on PATH and JAVA_HOME is not set)")
    version = _java_major_version(java)
    if version is not None and version < MIN_JAVA:
        raise ExecutionError(f"the Spark engine needs Java {MIN_JAVA} or newer "
                             f"(found Java {version} at {java})")


def _java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.path.exists(candidate):
            return candidate
    return shutil.which("java")


@functools.cache
def _java_major_version(java: str) -> int | None:
    """Major version from ``java -version`` (1.8 -> 8, 17.0.15 -> 17); None if unreadable."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _silence_pyspark_loggers() -> None:
    from pyspark.logger import PySparkLogger

    for name in _NOISY_LOGGERS:
        PySparkLogger.getLogger(name).disabled = True
    logging.getLogger("py4j").setLevel(logging.ERROR)
