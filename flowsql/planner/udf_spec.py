"""The Python API's decorators: ``flowsql.udf``, ``flowsql.udaf`` and ``flowsql.udtf``.

A decorator attaches a :class:`FunctionSpec` to the function (or class) and returns the
same object, so the module attribute stays the user's own callable and the import path
``'pkg.module.fn'`` finds both the code and its description. Registering the function
(``session.register_function`` or ``CREATE FUNCTION f AS 'pkg.module.fn'``) turns the spec
into a :class:`~flowsql.planner.udf.UserFunction`; hints given there override the
decorator's.

Types are SQL type strings (``'BIGINT'``, ``'DECIMAL(12, 2)'``) or ``pyarrow.DataType``
values; the sql layer converts the strings when the function is registered.

The calling contracts (what the engine passes and expects back):

* scalar (``udf``): called with one ``pyarrow.Array`` per argument (a constant argument
  is a ``pyarrow.Scalar``), all arrays of the batch's length; returns a ``pyarrow.Array``
  (or anything ``pyarrow.array`` accepts) of that same length.
* aggregate (``udaf``), a function: called once per group with one ``pyarrow.Array`` per
  argument holding all of the group's rows; returns the group's value (a Python value or
  a ``pyarrow.Scalar``). This is Flink's pandas aggregate (``func_type='pandas'``) over
  Arrow arrays.
* aggregate (``udaf``), a class: an accumulator with ``create_accumulator``,
  ``accumulate``, ``get_value`` and optionally ``merge`` and ``retract`` (Flink's
  ``AggregateFunction``), vectorized per group and batch; see
  :mod:`flowsql.planner.udf_accumulator`.
* table (``udtf``): see the table-function documentation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import pyarrow as pa

from flowsql.planner.udf import AGGREGATE, SCALAR, TABLE, FunctionHints

__all__ = ["SPEC_ATTRIBUTE", "FunctionSpec", "TypeSpec", "spec_of", "udaf", "udf", "udtf"]

#: a SQL type string or an Arrow type
TypeSpec: TypeAlias = "str | pa.DataType"
#: the attribute a decorator sets on the decorated object
SPEC_ATTRIBUTE = "__flowsql_function__"

F = TypeVar("F")


@dataclass(frozen=True)
class FunctionSpec:
    """What a decorator says about a function: its kind, types and hints."""

    kind: str
    result_type: TypeSpec | None = None
    arg_types: tuple[TypeSpec, ...] | None = None
    result_fields: tuple[tuple[str, TypeSpec], ...] = ()
    hints: FunctionHints = FunctionHints()


def spec_of(obj: Any) -> FunctionSpec | None:
    """The spec a decorator attached to ``obj``, or None when it was not decorated."""
    spec = getattr(obj, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, FunctionSpec) else None


def _attach(spec: FunctionSpec) -> Callable[[F], F]:
    def decorate(obj: F) -> F:
        if not callable(obj):
            raise TypeError(f"flowsql.{_DECORATOR[spec.kind]} decorates a function or a "
                            f"class, not {type(obj).__name__}")
        setattr(obj, SPEC_ATTRIBUTE, spec)
        return obj
    return decorate


_DECORATOR = {SCALAR: "udf", AGGREGATE: "udaf", TABLE: "udtf"}


def _arg_types(arg_types: Sequence[TypeSpec] | None) -> tuple[TypeSpec, ...] | None:
    return None if arg_types is None else tuple(arg_types)


def udf(result_type: TypeSpec, *, arg_types: Sequence[TypeSpec] | None = None,
        deterministic: bool = True, selectivity: float | None = None,
        cost_per_row: float | None = None, monotonic: bool = False) -> Callable[[F], F]:
    """Declare a vectorized scalar function returning ``result_type``. ``arg_types``
    (optional) are checked and cast to at each call as a built-in's are; without them the
    function receives the arguments' own types. Hints: see :mod:`flowsql.planner.udf`."""
    return _attach(FunctionSpec(SCALAR, result_type, _arg_types(arg_types), (), FunctionHints(
        deterministic=deterministic, selectivity=selectivity, cost_per_row=cost_per_row,
        monotonic=monotonic)))


def udaf(result_type: TypeSpec, *, arg_types: Sequence[TypeSpec] | None = None,
         deterministic: bool = True, cost_per_row: float | None = None
         ) -> Callable[[F], F]:
    """Declare a vectorized aggregate returning ``result_type``: a function called once
    per group with the group's arrays, or an accumulator class (see the module
    docstring)."""
    return _attach(FunctionSpec(AGGREGATE, result_type, _arg_types(arg_types), (),
                                FunctionHints(deterministic=deterministic,
                                              cost_per_row=cost_per_row)))


def udtf(result_fields: Sequence[tuple[str, TypeSpec]], *,
         arg_types: Sequence[TypeSpec] | None = None, deterministic: bool = True,
         cost_per_row: float | None = None, rows_per_call: float | None = None
         ) -> Callable[[F], F]:
    """Declare a table function returning rows of ``result_fields`` (name, type)."""
    return _attach(FunctionSpec(TABLE, None, _arg_types(arg_types), tuple(result_fields),
                                FunctionHints(deterministic=deterministic,
                                              cost_per_row=cost_per_row,
                                              rows_per_call=rows_per_call)))
