-- why: ORDER BY with LIMIT runs as a top-N, not a full sort.
SELECT o_orderkey, o_totalprice FROM orders ORDER BY o_totalprice DESC, o_orderkey LIMIT 5
