"""Connectors: where bounded and unbounded sources read their rows.

A connector turns a catalog :class:`~flowsql.planner.catalog.TableEntry` into record
batches of the table's engine types (see ``flowsql.planner.types.normalize_storage_type``).
Filters handed to a connector are hints: a connector may skip data that cannot match, but
the caller always re-applies every filter exactly, so a connector that pushes nothing is
correct, only slower.
"""
