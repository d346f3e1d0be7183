"""Calling a class-form user-defined aggregate (``planner.udf_accumulator``) from the
operators: every call of the user's methods goes through :class:`UserAccumulator`, so a
failure -- an exception, an accumulator that is not JSON data, a value that is not of the
declared type -- is a :class:`UserFunctionError` naming the function, the method and the
group it was working on, never a traceback from inside the engine.

``where`` arguments are zero-argument callables describing the group (``the group
(k = 'a')``); they run only when something failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from flowsql.planner.udf import UserFunction
from flowsql.planner.udf_accumulator import decode, encode, instance, updated
from flowsql.runtime.user_functions.results import UserFunctionError, as_result_scalar

__all__ = ["UserAccumulator"]

Where = Callable[[], str]


class UserAccumulator:
    """The methods of one class-form aggregate, with errors that name it."""

    def __init__(self, function: UserFunction) -> None:
        assert function.accumulator
        self.function = function
        self.code = instance(function.path)

    def _fail(self, method: str, where: Where, error: Exception, rows: int | None = None
              ) -> UserFunctionError:
        count = f", {rows} rows" if rows is not None else ""
        return UserFunctionError(f"aggregate function {self.function.name} failed in "
                                 f"{method}() on {where()}{count}: "
                                 f"{type(error).__name__}: {error}")

    def create(self, where: Where) -> Any:
        try:
            return self.code.create_accumulator()
        except Exception as e:
            raise self._fail("create_accumulator", where, e) from None

    def accumulate(self, acc: Any, arrays: Sequence[pa.Array], where: Where) -> Any:
        """``acc`` with the rows ``arrays`` added."""
        try:
            return updated(acc, self.code.accumulate(acc, *arrays))
        except Exception as e:
            raise self._fail("accumulate", where, e, len(arrays[0]) if arrays else None) \
                from None

    def retract(self, acc: Any, arrays: Sequence[pa.Array], where: Where) -> Any:
        """``acc`` with the rows ``arrays`` removed (the function must be retractable)."""
        try:
            return updated(acc, self.code.retract(acc, *arrays))
        except Exception as e:
            raise self._fail("retract", where, e, len(arrays[0]) if arrays else None) \
                from None

    def merge(self, acc: Any, other: Any, where: Where) -> Any:
        try:
            return updated(acc, self.code.merge(acc, other))
        except Exception as e:
            raise self._fail("merge", where, e) from None

    def value(self, acc: Any, where: Where) -> pa.Scalar:
        """The group's value, as a scalar of the declared result type."""
        try:
            result = self.code.get_value(acc)
        except Exception as e:
            raise self._fail("get_value", where, e) from None
        return as_result_scalar(self.function, result)

    def encode(self, acc: Any, where: Where) -> str:
        """``acc`` as JSON text (what state and partial results hold)."""
        try:
            return encode(acc)
        except (TypeError, ValueError) as e:
            raise UserFunctionError(
                f"aggregate function {self.function.name}: the accumulator of {where()} is "
                f"not JSON data (None, bool, numbers, strings, lists, dicts with string "
                f"keys), so it cannot be checkpointed or sent to another process: "
                f"{e}") from None

    def decode(self, text: str) -> Any:
        return decode(text)
