"""``python -m flowsql``: the same as the ``flowsql`` command."""

from flowsql.cli import main

raise SystemExit(main())
