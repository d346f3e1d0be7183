"""Spark failures -> :class:`ExecutionError` with one readable line.

Spark reports errors as Python exceptions wrapping a JVM exception whose text carries the
Java stack trace and, for analysis errors, a dump of the logical plan. Users must see the
first line of the message only (the error class and its explanation), so every call into
Spark runs inside :func:`spark_errors`, which also drops the exception chain (``from None``)
so no JVM trace is printed by a caller that shows tracebacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from flowsql.errors import ExecutionError, FlowSQLError

_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+[.;]?\s*$")
# The message flowsql's own checks raise inside Spark (``raise_error``) carry this class.
_USER_RAISED = "[USER_RAISED_EXCEPTION] "


def first_line(error: BaseException) -> str:
    """The first non-empty line of an exception's message, without the SQLSTATE suffix."""
    text = str(error).strip()
    if not text and error.args:
        text = str(error.args[0]).strip()
    line = next((s for s in text.splitlines() if s.strip()), type(error).__name__)
    if line.startswith("An exception was thrown from the Python worker"):
        # a Python traceback follows; its last line is the exception that was raised
        line = next((s for s in reversed(text.splitlines()) if s.strip()), line).strip()
    # A Py4J error begins with "An error occurred while calling o42.method." followed by
    # the Java exception line, which is the informative one.
    if line.startswith("An error occurred while calling"):
        rest = [s for s in text.splitlines()[1:] if s.strip()]
        if rest:
            line = rest[0].lstrip(": ").split(": ", 1)[-1]
    line = _SQLSTATE.sub("", line).strip()
    return line.removeprefix(_USER_RAISED)


def translate(error: BaseException) -> ExecutionError:
    """The ExecutionError a user sees for a failure inside Spark."""
    return ExecutionError(f"Spark: {first_line(error)}")


def is_spark_error(error: BaseException) -> bool:
    """True for exceptions raised by PySpark or the Py4J bridge (not bugs in our code)."""
    return type(error).__module__.startswith(("pyspark", "py4j"))


@contextmanager
def spark_errors() -> Iterator[None]:
    """Run Spark calls, turning any Spark or Py4J failure into an ExecutionError; other
    exceptions (bugs) pass through untouched."""
    try:
        yield
    except FlowSQLError:
        raise
    except Exception as e:
        if not is_spark_error(e):
            raise
        raise translate(e) from None
