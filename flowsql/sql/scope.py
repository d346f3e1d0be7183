"""Name resolution scopes for the binder.

A scope lists the relations visible in one FROM clause (each with its qualifier and
columns) and links to the scope of the enclosing query, which is how correlated references
resolve. Lookup is case-insensitive, as in DuckDB and Flink SQL for unquoted names.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from sqlglot import exp

from flowsql.errors import BindError
from flowsql.planner.schema import Field
from flowsql.sql.positions import node_position


@dataclass
class Relation:
    """One FROM item: ``qualifier`` (alias or table name) and its columns in order.

    ``hidden`` holds names an unqualified lookup skips: the right-hand copies of
    ``JOIN ... USING`` columns.
    """

    qualifier: str | None
    columns: list[Field]
    hidden: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class CteDef:
    """A WITH item: its query, optional column names, and the CTEs visible to it (those
    defined before it), so a CTE can use earlier CTEs but never itself."""

    query: exp.Expression
    columns: tuple[str, ...]
    visible: dict[str, CteDef]


@dataclass
class Scope:
    relations: list[Relation] = field(default_factory=list)
    parent: Scope | None = None
    ctes: dict[str, CteDef] = field(default_factory=dict)

    def child(self) -> Scope:
        """A scope for a subquery: sees this scope as outer, inherits CTEs."""
        return Scope(parent=self, ctes=dict(self.ctes))

    def local_fields(self) -> list[Field]:
        return [f for r in self.relations for f in r.columns]

    def _matches(self, qualifier: str | None, name: str) -> list[Field]:
        found: list[Field] = []
        lname = name.lower()
        for rel in self.relations:
            if qualifier is not None:
                if rel.qualifier is None or rel.qualifier.lower() != qualifier.lower():
                    continue
            elif lname in rel.hidden:
                continue
            found.extend(f for f in rel.columns if f.name.lower() == lname)
        unique: dict[int, Field] = {f.cid: f for f in found}
        return list(unique.values())

    def has_qualifier(self, qualifier: str) -> bool:
        return any(r.qualifier is not None and r.qualifier.lower() == qualifier.lower()
                   for r in self.relations)

    def resolve(self, column: exp.Column, sql: str) -> Field:
        """The field a column reference names, here or in an enclosing query."""
        qualifier = column.table or None
        name = column.name
        scope: Scope | None = self
        while scope is not None:
            matches = scope._matches(qualifier, name)
            if len(matches) > 1:
                line, col = node_position(column)
                raise BindError(f"column reference '{column.sql()}' is ambiguous", line, col, sql)
            if matches:
                return matches[0]
            scope = scope.parent
        line, col = node_position(column)
        if qualifier is not None and not self._any_qualifier(qualifier):
            hint = self._suggest([r.qualifier for r in self._all_relations() if r.qualifier])
            raise BindError(f"table or alias '{qualifier}' not found in FROM{hint}",
                            line, col, sql)
        candidates = [f.name for r in self._all_relations() for f in r.columns
                      if qualifier is None or (r.qualifier or "").lower() == qualifier.lower()]
        hint = self._suggest(candidates, name)
        raise BindError(f"column '{column.sql()}' not found{hint}", line, col, sql)

    def _all_relations(self) -> list[Relation]:
        out: list[Relation] = []
        scope: Scope | None = self
        while scope is not None:
            out.extend(scope.relations)
            scope = scope.parent
        return out

    def _any_qualifier(self, qualifier: str) -> bool:
        return any((r.qualifier or "").lower() == qualifier.lower() for r in self._all_relations())

    @staticmethod
    def _suggest(candidates: list[str], name: str | None = None) -> str:
        if name is None:
            return f"; available: {', '.join(sorted(set(candidates)))}" if candidates else ""
        lowered = {c.lower(): c for c in candidates}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
        return f"; did you mean '{lowered[close[0]]}'?" if close else ""
