"""The SQL front end: dialect, statement parsing, binding to a typed logical plan."""
