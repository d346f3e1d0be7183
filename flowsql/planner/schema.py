"""Fields and schemas of plan nodes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import ColumnRef, new_cid


@dataclass(frozen=True, slots=True)
class Field:
    """One output column of a plan node: a unique id, a display name, a type."""

    cid: int
    name: str
    dtype: pa.DataType = field(compare=False)
    nullable: bool = field(default=True, compare=False)

    def ref(self) -> ColumnRef:
        return ColumnRef(self.cid, self.name, self.dtype)

    def renamed(self, name: str) -> Field:
        return Field(self.cid, name, self.dtype, self.nullable)

    def as_nullable(self) -> Field:
        return Field(self.cid, self.name, self.dtype, True)

    @staticmethod
    def fresh(name: str, dtype: pa.DataType, nullable: bool = True) -> Field:
        return Field(new_cid(), name, dtype, nullable)


Schema = tuple[Field, ...]


def to_arrow_schema(fields: Schema) -> pa.Schema:
    """The Arrow schema of a plan's output (names may repeat, as SQL allows)."""
    return pa.schema([pa.field(f.name, f.dtype if not T.is_null(f.dtype) else pa.null(),
                               nullable=f.nullable) for f in fields])
