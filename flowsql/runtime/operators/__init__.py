"""Physical operators of the runtime: one module per operator family.

Every operator implements :class:`flowsql.runtime.operator.Operator` over batches whose
columns are, by position, the fields of its physical node's schema. The registry
(:mod:`flowsql.runtime.registry`) maps physical node types to the factories here.
"""
