"""The interactive shell: the REPL, its meta-commands and statement buffering.

Nothing outside the shell imports it except ``flowsql.cli`` (an import-linter contract);
result rendering, which the session needs for ``Result.show()``, lives below both in
``flowsql.render``.
"""
