"""The Nexmark streaming benchmark: the event generator (``generator``), the tables and
queries in their Flink SQL form (``queries``), ``flowsql nexmark gen`` / ``run``."""
