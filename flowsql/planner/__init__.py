"""The shared vocabulary: types, schemas, expressions, logical and physical plans, catalog.

This package imports no other flowsql layer.
"""
