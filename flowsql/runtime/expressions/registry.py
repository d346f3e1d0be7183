"""Compiled expression nodes and the registry from function name to kernel builder.

An expression compiles once into a tree of :class:`Node` closures; evaluating a batch only
calls the closures. Literals stay Arrow scalars (pyarrow.compute broadcasts them), so a
column-vs-literal comparison is a single kernel call and nothing is materialised per row
until the outermost result is broadcast.

A builder receives the bound :class:`Call` and its compiled arguments and returns the run
function. It may return a result whose Arrow type differs from ``call.dtype``; the compiler
casts it, so the planner's type is always what a parent sees. Builders registered as
``strict`` are never called with a constant NULL argument: the compiler folds such calls to a
typed NULL (SQL's NULL-in, NULL-out rule), which is also what keeps null-typed literals away
from kernels that have no null-type overload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa

from flowsql.planner.expressions import Call

Datum: TypeAlias = "pa.Array | pa.Scalar"
Run: TypeAlias = Callable[[pa.RecordBatch], Datum]


@dataclass(frozen=True, slots=True)
class Node:
    """A compiled expression: ``run`` maps a batch to an array (or a scalar for constants).

    ``value`` is set when the node is constant (no column inside); parents then fold.
    """

    run: Run
    dtype: pa.DataType
    value: pa.Scalar | None = None

    @property
    def constant(self) -> bool:
        return self.value is not None

    @property
    def scalar(self) -> pa.Scalar:
        """The value of a constant node (callers check ``constant`` first)."""
        if self.value is None:
            raise TypeError("not a constant expression node")
        return self.value

    @property
    def python_value(self) -> Any:
        """The Python value of a constant node (None for NULL)."""
        return self.scalar.as_py()

    @property
    def is_null_constant(self) -> bool:
        return self.value is not None and not self.value.is_valid


Builder = Callable[[Call, list[Node]], Run]


@dataclass(frozen=True, slots=True)
class Function:
    build: Builder
    strict: bool


KERNELS: dict[str, Function] = {}


def register(*names: str, strict: bool = True) -> Callable[[Builder], Builder]:
    """Register a builder for canonical function names (see planner ``FUNCTIONS``)."""

    def wrap(build: Builder) -> Builder:
        for name in names:
            KERNELS[name] = Function(build, strict)
        return build

    return wrap


def constant_node(value: pa.Scalar) -> Node:
    return Node(lambda batch: value, value.type, value)
