"""Finding a user-defined function's code by its import path, and a path for a callable.

Every process that runs a plan (the session's and each worker's) imports the function
named by ``UserFunction.path`` itself; nothing is pickled. The import is cached per
process, so a function costs one import however many batches or operators call it.

A path is ``'package.module.attribute'`` (the attribute may be nested:
``'pkg.mod.Class.method'``). Failures are :class:`~flowsql.errors.CatalogError` naming the
path: the module cannot be imported, the attribute is missing, or it is not callable.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from flowsql.errors import CatalogError

__all__ = ["callable_path", "import_function", "is_importable"]

_cache: dict[str, Any] = {}
_lock = threading.Lock()


def import_function(path: str) -> Any:
    """The object ``path`` names (imported once per process)."""
    found = _cache.get(path)
    if found is not None:
        return found
    with _lock:
        found = _cache.get(path)
        if found is None:
            found = _import(path)
            _cache[path] = found
    return found


def _import(path: str) -> Any:
    parts = path.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise CatalogError(f"function path '{path}' is not of the form 'module.function' "
                           "(a dotted Python import path)")
    # the longest importable module prefix, then attributes below it
    error: BaseException | None = None
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name is not None and not module_name.startswith(e.name) \
                    and not e.name.startswith(module_name):
                # the module exists but itself imports something missing
                raise CatalogError(f"function '{path}': importing module '{module_name}' "
                                   f"failed: {e}") from None
            error = e
            continue
        except Exception as e:  # the module's own code failed while importing
            raise CatalogError(f"function '{path}': importing module '{module_name}' "
                               f"failed: {type(e).__name__}: {e}") from None
        obj: Any = module
        for attribute in parts[split:]:
            if not hasattr(obj, attribute):
                if error is not None:  # 'pkg.missing_module.fn': say the module is missing
                    break
                raise CatalogError(f"function '{path}': module '{module_name}' has no "
                                   f"attribute '{'.'.join(parts[split:])}'")
            obj = getattr(obj, attribute)
        else:
            return _checked_callable(path, obj)
        break
    raise CatalogError(f"function '{path}': module '{'.'.join(parts[:-1])}' not found "
                       f"({error})")


def _checked_callable(path: str, obj: Any) -> Any:
    if not callable(obj):
        raise CatalogError(f"function '{path}' is a {type(obj).__name__}, not a "
                           "function or class")
    return obj


def callable_path(obj: Any) -> str:
    """The import path of a module-level function or class: ``module.qualname``.

    CatalogError when the object cannot be found again by that path in another process:
    a lambda, a function defined inside another function, or one defined in ``__main__``
    (a script or an interactive prompt: worker processes do not run the script).
    """
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    label = getattr(obj, "__name__", repr(obj))
    if module is None or qualname is None:
        raise CatalogError(f"function {label!r} has no module and qualified name to import "
                           "it by; define it at the top level of a module")
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise CatalogError(f"function '{module}.{qualname}' cannot be imported by its path "
                           "(a lambda or a function defined inside another function); "
                           "define it at the top level of an importable module")
    if module == "__main__":
        raise CatalogError(f"function '{qualname}' is defined in __main__ (a script or an "
                           "interactive prompt), which worker processes cannot import; "
                           "define it in an importable module")
    path = f"{module}.{qualname}"
    if import_function(path) is not obj:
        raise CatalogError(f"function '{path}' does not import as the object given (was it "
                           "redefined or decorated by a wrapper?)")
    return path


def is_importable(path: str) -> bool:
    """Whether ``path`` imports (without raising)."""
    try:
        import_function(path)
    except CatalogError:
        return False
    return True
