"""The ``socket`` connector's pieces: the client connection (``connection``) and the
splitting of received bytes into records (``records``). The source operator is
``flowsql.runtime.operators.source.socket_scan``."""
