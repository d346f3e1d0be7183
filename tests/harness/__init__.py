"""Helpers shared by test modules, one concern per module.

Test modules import them explicitly (``from tests.harness.operators import duck``); a test
module never imports another test module, a ``conftest.py`` or a helper by bare module name.
Fixtures stay in ``conftest.py`` files and build on these helpers.
"""
