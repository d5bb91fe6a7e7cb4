"""Thin handlers, one module per method family: each `@method` handler is a row of the method table the
composition root lists (`app.builtin_handlers`); importing this package registers nothing.

Handlers validate, call domain code and return a result model; they import heavy domain modules lazily,
inside the handler, so the daemon starts fast.
"""
