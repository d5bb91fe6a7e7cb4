"""The PostgreSQL store (psycopg 3 and numpy, the optional `postgres` extra): tables like SQLite's, weighted
`tsvector` columns and postings made from them, BM25 computed from the postings, ordered migrations under an
advisory lock."""

from jsonl_engine.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
