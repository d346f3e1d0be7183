"""TPC-H for flowsql: data generation, the 22 queries, result verification, a benchmark runner.

The pieces are independent: ``generate`` writes Parquet files, ``queries`` hands out query
text, ``verify`` compares two Arrow tables, ``runner`` times an engine over the queries and
checks each result against DuckDB, ``cli`` is the ``flowsql tpch`` command.
"""

from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query

# generate() is not re-exported here: it would shadow its own module, flowsql.tpch.generate.
__all__ = ["QUERY_NUMBERS", "compare_tables", "is_ordered_query", "load_query"]
