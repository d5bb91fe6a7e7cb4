"""The PostgreSQL store (psycopg 3, the optional `postgres` extra): tables like SQLite's, weighted `tsvector`
columns with GIN indexes, BM25 computed in SQL from them, ordered migrations under an advisory lock."""

from jsonl_engine.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
