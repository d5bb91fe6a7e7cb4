"""Where a KB lives: a directory (SQLite) or a PostgreSQL connection URL. No driver imported here.

A URL may carry a password: `redact` removes it from any text (a URL, an error message) before it is logged,
shown in `capabilities`, or put in an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

URL_SCHEMES = ("postgresql://", "postgres://")
MASK = "***"
_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*@", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.strip().lower().startswith(URL_SCHEMES)


def backend_of(location: str | Path) -> str:
    return "postgresql" if is_url(location) else "sqlite"


def redact(text: str, secret: str | None = None) -> str:
    """`text` without the password of any PostgreSQL URL or `password=` keyword in it (and without `secret`)."""
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", text)
    text = _QUERY_PASSWORD.sub(lambda m: m.group(1) + MASK, text)
    text = _KEYWORD_PASSWORD.sub(lambda m: m.group(1) + MASK, text)
    if secret:
        text = re.sub(re.escape(secret), MASK, text, flags=re.IGNORECASE)
    return text


def url_password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def describe(location: str | Path) -> str:
    """The location as it may be shown: a directory path, or the URL without its password."""
    return redact(str(location), url_password(str(location)) if is_url(location) else None)
