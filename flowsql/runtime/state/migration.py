"""State schema evolution: how a snapshot table written under one schema is read under the
schema an upgraded operator declares.

A state compares by column *name* (the key-group column and the schema metadata aside):

* same columns, same types, same order: restored as it is;
* columns added: allowed only where the state declares a *migration default* for the
  column (``migration_defaults``: the value a key that existed before the upgrade starts
  with -- 0 for a count, NULL for a sum whose count of values is 0). A state that
  declares none cannot fill new columns for its existing keys, so the change is
  incompatible;
* columns removed: their data is dropped, which is allowed only as unclaimed state
  (``execution.savepoint.ignore-unclaimed-state``);
* a column whose type changed: incompatible (values are never converted silently).

``compare`` judges, ``conform`` carries a judged-compatible table over. Both are pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class SchemaChange:
    """What separates a saved state schema from the declared one."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    retyped: tuple[str, ...]
    #: added columns without a migration default
    unfillable: tuple[str, ...]
    reordered: bool

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.removed or self.retyped or self.reordered)

    @property
    def compatible(self) -> bool:
        """Restorable, possibly after dropping removed columns."""
        return not (self.retyped or self.unfillable)

    def describe(self, saved: pa.Schema, declared: pa.Schema,
                 defaults: Mapping[str, Any] | None) -> str:
        parts = [f"+{name} (starts at {_text((defaults or {}).get(name))})"
                 for name in self.added if name not in self.unfillable]
        parts += [f"+{name} (no value for existing keys)" for name in self.unfillable]
        parts += [f"-{name}" for name in self.removed]
        parts += [f"{name}: {saved.field(name).type} -> {declared.field(name).type}"
                  for name in self.retyped]
        if self.reordered and not parts:
            parts.append("columns reordered")
        return ", ".join(parts)


def compare(saved: pa.Schema, declared: pa.Schema,
            defaults: Mapping[str, Any] | None) -> SchemaChange:
    """How ``saved`` differs from ``declared`` (see the module docstring)."""
    saved_names, declared_names = list(saved.names), list(declared.names)
    added = tuple(n for n in declared_names if n not in saved_names)
    removed = tuple(n for n in saved_names if n not in declared_names)
    retyped = tuple(n for n in declared_names if n in saved_names
                    and not saved.field(n).type.equals(declared.field(n).type))
    unfillable = tuple(n for n in added if defaults is None or n not in defaults)
    common = [n for n in declared_names if n in saved_names]
    reordered = common != [n for n in saved_names if n in declared_names]
    return SchemaChange(added, removed, retyped, unfillable, reordered)


def conform(table: pa.Table, declared: pa.Schema,
            defaults: Mapping[str, Any] | None) -> pa.Table:
    """``table`` with exactly ``declared``'s columns: kept columns by name, added columns
    filled with their migration default, removed columns dropped. The caller judged the
    change compatible (``compare``); a column without a default here is an error."""
    if table.schema.remove_metadata().equals(declared.remove_metadata()):
        return table
    columns = []
    for field in declared:
        if field.name in table.schema.names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            if defaults is None or field.name not in defaults:
                raise ValueError(f"state column '{field.name}' has no migration default")
            columns.append(pa.repeat(pa.scalar(defaults[field.name], field.type),
                                     table.num_rows))
    return pa.Table.from_arrays(columns, schema=declared)


def _text(value: Any) -> str:
    return "NULL" if value is None else repr(value)
