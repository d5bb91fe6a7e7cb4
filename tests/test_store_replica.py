"""Reads from a streaming replica (`[kb] read_url`), writes to the primary: a real primary and a hot standby made
by `pg_basebackup -R` (`pg_replica`), daemons as subprocesses and stores in process."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jsonl_engine.config import ConfigError, load_settings
from jsonl_engine.errors import KBUnavailable, NotFound
from jsonl_engine.ingest import sync
from jsonl_engine.store import open_store
from tests.support.daemon import Daemon

PRIMARY = "postgresql://alice:pw1@db.example:5432/kb"
REPLICA = "postgresql://alice:pw2@replica.example:5432/kb"
DEADLINE_S = 30.0


def eventually(check: Callable[[], Any], what: str) -> Any:
    """`check()`'s first truthy value, asked until DEADLINE_S (the replica's lag is milliseconds)."""
    deadline = time.monotonic() + DEADLINE_S
    while not (value := check()):
        assert time.monotonic() < deadline, f"not within {DEADLINE_S} s: {what}"
        time.sleep(0.05)
    return value


def _pdf(path: Path, animal: str) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 11)
    pdf.add_page()
    pdf.multi_cell(0, 6, f"The {animal} report\n\n" + f"The {animal} digs burrows in the dry hills. " * 20)
    pdf.output(str(path))
    return path


def _database(primary, replica) -> tuple[str, str]:
    """A new database on the primary, once the replica has it: (primary URL, replica URL with a password, which
    trust authentication ignores)."""
    import psycopg

    url = primary.new_database()
    read_url = replica.url(url.rsplit("/", 1)[1]).replace("postgres@", "postgres:topsecret@")

    def there() -> bool:
        try:
            psycopg.connect(read_url, connect_timeout=5).close()
        except psycopg.OperationalError:
            return False
        return True

    eventually(there, "the replica has the new database")
    return url, read_url


def test_read_url_is_set_by_the_file_or_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "engine.toml"
    config.write_text(f'[kb]\nurl = "{PRIMARY}"\nread_url = "{REPLICA}"\n')
    settings = load_settings(config, env={})
    assert (settings.kb_location, settings.kb_read_url) == (PRIMARY, REPLICA)
    assert "pw2" not in repr(settings) and "pw2" not in settings.model_dump_json()
    other = REPLICA.replace("replica.example", "other.example")
    assert load_settings(config, env={"JSONL_ENGINE_KB_READ_URL": other}).kb_read_url == other
    assert load_settings(kb_dir=PRIMARY, env={"JSONL_ENGINE_KB_READ_URL": other}).kb_read_url == other
    assert load_settings(env={}).kb_read_url is None
    local = load_settings(config, kb_dir="local", env={})  # a directory given later drops the file's URLs
    assert (local.kb_location, local.kb_read_url) == (Path("local"), None)
    with pytest.raises(ConfigError, match="needs a PostgreSQL KB"):
        load_settings(kb_dir="local", env={"JSONL_ENGINE_KB_READ_URL": REPLICA})
    only = tmp_path / "only.toml"
    only.write_text(f'[kb]\nread_url = "{REPLICA}"\n')
    with pytest.raises(ConfigError, match="needs a PostgreSQL KB") as err:
        load_settings(only, env={})
    assert "pw2" not in str(err.value)
    with pytest.raises(ConfigError, match="not a postgresql:// URL"):
        load_settings(kb_dir=PRIMARY, env={"JSONL_ENGINE_KB_READ_URL": "/some/dir"})


def test_daemons_write_to_the_primary_and_read_from_the_replica(pg_replica, tmp_path: Path) -> None:
    primary, replica = pg_replica
    url, read_url = _database(primary, replica)
    shown = read_url.replace("topsecret", "***")
    wombat, numbat = _pdf(tmp_path / "wombat.pdf", "wombat"), _pdf(tmp_path / "numbat.pdf", "numbat")
    with Daemon(kb_dir=url) as a, Daemon(kb_dir=url, env={"JSONL_ENGINE_KB_READ_URL": read_url}) as b:
        doc = a.result("kb.ingest", {"paths": [str(wombat)]})["document_id"]
        assert doc
        eventually(lambda: doc in {d["document_id"] for d in b.result("kb.documents")["documents"]},
                   "the reading daemon lists the document the other ingested")
        items = b.result("kb.context", {"query": "wombat burrows"})["items"]
        assert items and items[0]["document_id"] == doc
        # B writes (to the primary: the replica refuses writes) and reads its own write at once
        mine = b.result("kb.ingest", {"paths": [str(numbat)]})
        assert mine["document_id"] and not mine["skipped"]
        assert b.result("kb.context", {"query": "numbat"})["items"][0]["document_id"] == mine["document_id"]
        eventually(lambda: mine["document_id"] in {d["document_id"] for d in a.result("kb.documents")["documents"]},
                   "the other daemon lists the document written through the reading one")

        replica.halt()
        try:
            err = b.error("kb.context", {"query": "wombat burrows"})
            assert err["code"] == "kb_unavailable", err
            assert shown in err["message"] and err["data"]["kb"] == shown, err
            assert b.result("capabilities")["kb"]["backend"] == "postgresql"  # the daemon keeps serving
            assert b.error("kb.documents")["code"] == "kb_unavailable"
        finally:
            replica.resume()
        again = eventually(lambda: b.request("kb.context", {"query": "wombat burrows"})[-1]["status"] == "ok",
                           "reads work again once the replica is back")
        assert again and b.result("kb.context", {"query": "wombat burrows"})["items"][0]["document_id"] == doc
    assert "topsecret" not in b.stderr


def test_a_store_reads_its_own_writes_before_the_replica_replays_them(pg_replica) -> None:
    """With the replica's replay paused, a store that wrote reads from the primary (its write is there), another
    store on the replica does not see it yet; once resumed, both do, and the writer reads the replica again."""
    primary, replica = pg_replica
    url, read_url = _database(primary, replica)
    writer, other = open_store(url, read_url=read_url), open_store(url, read_url=read_url)
    try:
        replica.replay_paused(True)
        try:
            doc = sync.ingest_text(writer, "# Quoll\n\nThe quoll hunts at night.\n", "Quoll", "text/markdown").document_id
            assert writer.document(doc).title == "Quoll"
            scope = writer.scope(None, ["approved"])
            assert [h.document_id for h in writer.search_pages([("quoll",)], scope, 5)] == [doc]
            with pytest.raises(NotFound):  # the replica has not replayed it
                other.document(doc)
            assert writer._db._behind  # the writer waits for the replica
        finally:
            replica.replay_paused(False)
        eventually(lambda: doc in {d.document_id for d in other.documents()}, "the replica replays the write")
        eventually(lambda: writer.documents() and not writer._db._behind, "the writer reads the replica again")
    finally:
        writer.close()
        other.close()


def test_a_replica_behind_the_primarys_migrations_is_kb_unavailable(pg_replica, monkeypatch) -> None:
    from jsonl_engine.store.postgres import replica as routing

    primary, replica = pg_replica
    url, read_url = _database(primary, replica)
    monkeypatch.setattr(routing, "SCHEMA_WAIT_S", 0.5)
    replica.replay_paused(True)  # the replica has the empty database, not the migrations the store makes
    try:
        with pytest.raises(KBUnavailable) as err:
            open_store(url, read_url=read_url)
        assert err.value.data["reason"] == "replica_behind" and "schema version 0" in err.value.message
        assert "topsecret" not in err.value.message
    finally:
        replica.replay_paused(False)
    monkeypatch.setattr(routing, "SCHEMA_WAIT_S", DEADLINE_S)
    store = open_store(url, read_url=read_url)  # waits for the replay
    assert store.documents() == []
    store.close()
