"""The faces people use: the interactive shell (``repl``) and result rendering (``render``).

Nothing here is imported by the engine layers; ``session.py`` imports ``render`` lazily for
``Result.show()``.
"""
