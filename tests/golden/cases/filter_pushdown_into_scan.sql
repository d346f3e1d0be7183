-- why: WHERE conjuncts on one table end up inside its scan; only used columns are read. The one golden that shows estimated rows (rows=~N).
SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderdate >= DATE '1995-01-01' AND o_orderstatus = 'F'
