"""Physical operators of the runtime, one per file, grouped by family: ``aggregate``,
``join``, ``window`` (window TVFs), ``over`` (SQL window functions), ``rank``,
``watermark``, ``source`` and ``sink``; single-file families (filter, project, limit, sort,
set operations) sit at the top.

Every operator implements :class:`flowsql.runtime.operator.Operator` over batches whose
columns are, by position, the fields of its physical node's schema. The registry
(:mod:`flowsql.runtime.registry`) maps physical node types to the operators here;
``flowsql/runtime/README.md`` lists node -> file.
"""
