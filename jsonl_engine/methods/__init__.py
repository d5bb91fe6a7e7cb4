"""Thin handlers, one module per method family. Importing this package registers every built-in method.

Handlers validate, call domain code and return a result model; they import heavy domain modules lazily,
inside the handler, so the daemon starts fast.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
