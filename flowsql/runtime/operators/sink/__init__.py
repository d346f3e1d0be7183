"""The operator at the root of ``INSERT INTO``: writes its input through a table's
connector."""
