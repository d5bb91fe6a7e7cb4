"""FTS5's bm25() from statistics the store caches, as an FTS5 auxiliary function (APSW connections only).

FTS5's bm25() starts every statement by counting, over the whole index, the rows holding each query phrase (its
IDF pass): a search of one document's rows then costs as much as the library is large. The store already caches
those counts per KB generation (`df:<kind>` in its memo), and a table's row count and token total are in FTS5's
averages record (`<table>_data` row 1). `jsonl_bm25(<table>, avgdl, [weight, ...], idf, ...)` takes them as
arguments and computes, per matching row, the score bm25(<table>, [weight, ...]) gives, to the bit: the same
formula (SQLite's ext/fts5/fts5_aux.c, fts5Bm25Function) in the same order of floating-point operations, with
the phrase's hits per column (`phrase_locations`), the row's token count (`column_size(-1)`), the IDFs from the
same counts and avgdl from the same totals. It returns the score positive (bm25() is negative; the statements
negate bm25()).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from jsonl_engine.store.sqlite import driver

FUNCTION = "jsonl_bm25"
K1 = 1.2
B = 0.75


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF of a phrase on `hits` of `rows` rows: log((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    x = (rows - hits + 0.5) / (hits + 0.5)
    if x <= 0.0:  # only with counts from another state of the index: C's log gives -inf (clamped) or NaN
        return 1e-6 if x == 0.0 else math.nan
    value = math.log(x)
    return value if value > 0.0 else 1e-6


def varint(buf: bytes, i: int) -> tuple[int, int]:
    """SQLite's varint (big-endian 7-bit groups, the ninth byte whole) at `buf[i]`: (value, next offset)."""
    value = 0
    for k in range(8):
        c = buf[i + k]
        value = (value << 7) | (c & 0x7F)
        if not c & 0x80:
            return value, i + k + 1
    return (value << 8) | buf[i + 8], i + 9


def totals(block: bytes | None) -> tuple[int, int]:
    """(rows, tokens over all columns) from an FTS5 averages record (a varint row count, then one varint token
    total per column), as FTS5's xRowCount and xColumnTotalSize(-1) read it; (0, 0) for an empty table."""
    if not block:
        return 0, 0
    rows, i = varint(block, 0)
    tokens = 0
    while i < len(block):
        size, i = varint(block, i)
        tokens += size
    return rows, tokens


def _exact_multiple(w: float) -> bool:
    """`w` added n times equals w * n exactly (a short dyadic fraction: every partial sum is representable)."""
    num, den = w.as_integer_ratio()
    return den & (den - 1) == 0 and abs(num) < 1 << 21


def _prepare(api: Any, args: Sequence[Any]) -> tuple:
    phrases = api.phrase_count
    if len(args) < 1 + phrases:
        raise ValueError(f"{FUNCTION}: {phrases} phrases need {phrases} IDFs after avgdl, got {len(args) - 1}")
    avgdl = float(args[0])
    weights = [float(w) for w in args[1:len(args) - phrases]]
    weights += [1.0] * (api.column_count - len(weights))  # bm25(): a column without a weight weighs 1.0
    weights = weights[:api.column_count]
    idfs = [float(x) for x in args[len(args) - phrases:]]
    plain = all(w == 1.0 for w in weights)
    exact = plain or all(_exact_multiple(w) for w in weights)
    return phrases, avgdl, idfs, weights, plain, exact


def score(api: Any, *args: Any) -> float:
    """The auxiliary function: `args` = (avgdl, [weight per column, ...], idf per phrase, ...)."""
    data = api.aux_data
    if data is None:
        data = api.aux_data = _prepare(api, args)
    phrases, avgdl, idfs, weights, plain, exact = data
    norm = K1 * (1 - B + B * api.column_size(-1) / avgdl)
    if plain and len(weights) == 1:
        return _one_column(api, phrases, idfs, norm)
    if exact:
        return _exact_columns(api, phrases, idfs, weights, norm)
    return _columns_in_order(api, phrases, idfs, weights, norm)


def _one_column(api: Any, phrases: int, idfs: list[float], norm: float) -> float:
    """One column (pages, covers): a phrase's hits are its offsets there."""
    total = 0.0
    offsets = api.phrase_column_offsets
    for i in range(phrases):
        f = len(offsets(i, 0))
        if f:
            total += idfs[i] * ((f * (K1 + 1.0)) / (f + norm))
    return total


def _exact_columns(api: Any, phrases: int, idfs: list[float], weights: list[float], norm: float) -> float:
    """Every partial sum exact: the order of the columns does not matter."""
    total = 0.0
    offsets, columns = api.phrase_column_offsets, api.phrase_columns
    for i in range(phrases):
        found = columns(i)
        if not found:  # most phrases of a statement are not in a given row
            continue
        f = 0.0
        for c in found:
            f += weights[c] * len(offsets(i, c))
        if f:
            total += idfs[i] * ((f * (K1 + 1.0)) / (f + norm))
    return total


def _columns_in_order(api: Any, phrases: int, idfs: list[float], weights: list[float], norm: float) -> float:
    """FTS5 adds a hit's column weight once per hit, in column order (the same float sums as bm25())."""
    total = 0.0
    for i in range(phrases):
        f = 0.0
        for w, hits in zip(weights, api.phrase_locations(i), strict=True):
            for _ in hits:
                f += w
        if f:
            total += idfs[i] * ((f * (K1 + 1.0)) / (f + norm))
    return total


def register(conn: driver.Connection) -> None:
    driver.register_fts5_function(conn, FUNCTION, score)
