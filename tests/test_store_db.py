"""The store's single writer survives a transaction that fails at COMMIT."""

from __future__ import annotations

import pytest

from jsonl_engine.ingest import sync
from jsonl_engine.store import open_store
from jsonl_engine.store.sqlite import driver


def test_a_failed_commit_rolls_back_and_the_writer_keeps_working(tmp_path):
    store = open_store(tmp_path / "kb")
    db = store._db  # the SQLite connections behind the store
    try:
        with pytest.raises(driver.IntegrityError), db.write() as conn:
            conn.execute("PRAGMA defer_foreign_keys=ON")  # the violation surfaces only at COMMIT
            conn.execute("INSERT INTO pages (document_id, number, text) VALUES ('nobody', 1, 'orphan')")
        assert not db._writer.in_transaction
        assert db.reader().execute("SELECT COUNT(*) FROM pages").fetchone()[0] == 0
        out = sync.ingest_text(store, "# After\n\nstill writable\n", "t", "text/markdown")
        assert out.error is None and out.document_id
    finally:
        store.close()


def test_a_removed_documents_text_does_not_stay_in_the_kb_file(tmp_path):
    """secure_delete on every connection, whichever SQLite library (APSW's own is built with it off)."""
    kb = tmp_path / "kb"
    store = open_store(kb)
    sync.ingest_text(store, "# Kept\n\n" + "Ordinary words about revenue and costs. " * 300, title="kept")
    gone = sync.ingest_text(store, "# Memo\n\n" + "The password is Quixotrelmwarp in the vault. " * 300, title="memo")
    store.remove(gone.document_id)
    store.tidy_indexes()
    store.close()
    data = b"".join(p.read_bytes() for p in kb.iterdir() if p.is_file())
    assert b"Ordinary words" in data  # the kept document is there, as text the check could find
    assert b"Quixotrelmwarp" not in data and b"quixotrelmwarp" not in data  # neither its text nor its index terms
