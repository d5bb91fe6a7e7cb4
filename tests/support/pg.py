"""A throwaway PostgreSQL server for the tests and benchmarks: Debian's `postgresql` package (initdb, pg_ctl),
a temporary data directory, a free port on 127.0.0.1, trust authentication; run as the unprivileged `postgres`
user when we are root (initdb refuses root). `with PgServer() as pg: url = pg.new_database()`; a streaming
replica of it: `with PgReplica(pg) as replica: replica.url(name)` (the primary's databases, read-only).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

MIN_VERSION = 15
# The test suite's servers (`PgServer(in_memory=True)`) keep their data directory on a memory filesystem (/dev/shm)
# when it has this much room: a session's server holds some hundred databases, and writing them to a disk, then
# deleting them at its end (up to a minute on a busy machine), is time the tests do not test (fsync is off: no test
# relies on the disk). The benchmarks' servers stay on the disk.
SHM = Path("/dev/shm")
SHM_MIN_FREE = 6 << 30


def server_bin() -> Path | None:
    """The directory holding initdb and pg_ctl (the newest Debian install >= 15, else on PATH), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    found = [p for p in found if p.parent.parent.name.isdigit() and int(p.parent.parent.name) >= MIN_VERSION]
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def driver_available() -> bool:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def _scratch_dir() -> str | None:
    """/dev/shm when it is a writable memory filesystem with room; None: the system's temporary directory."""
    try:
        roomy = shutil.disk_usage(SHM).free >= SHM_MIN_FREE
    except OSError:
        return None
    return str(SHM) if roomy and os.access(SHM, os.W_OK) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self, bin_dir: Path | None = None, settings: dict[str, str] | None = None, *,
                 in_memory: bool = False) -> None:
        self.in_memory = in_memory
        self.settings = dict(settings or {})  # more server settings (`-c name=value`), over the defaults below
        self.bin = bin_dir or server_bin()
        if self.bin is None:
            raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
        self.root = Path(tempfile.mkdtemp(prefix="jsonl-engine-pg-", dir=_scratch_dir() if in_memory else None))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "postgres"
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            self._as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.root, "postgres")
        self._names = itertools.count(1)
        self.started = False

    def _run(self, *cmd: str) -> None:
        subprocess.run([*self._as, *cmd], check=True, capture_output=True, timeout=120)

    def start(self) -> PgServer:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-sync")
        self.resume()
        return self

    def resume(self) -> None:
        """Start the server on its data directory (again, after `halt`). initdb's pg_hba.conf lets 127.0.0.1
        replicate (trust) and wal_level defaults to replica: any of these servers can be a primary (`PgReplica`)."""
        settings = {"shared_buffers": "128MB", **self.settings}
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
                + "".join(f" -c {name}={value}" for name, value in settings.items()))
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.root / "log"),
                  "-w", "-t", "60", "start")
        self.started = True

    def halt(self) -> None:
        """Stop the server (fast: every connection is closed), keeping its data for `resume`."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def restart(self) -> None:
        """Stop the server (fast: every connection is closed) and start it again on the same port."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-m", "fast",
                  "-w", "-t", "60", "restart")

    def terminate_backends(self, url: str) -> int:
        """pg_terminate_backend() on every other connection to the database of `url`; how many there were."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
        return len(rows)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def new_database(self, prefix: str = "kb") -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def stop(self) -> None:
        if self.started:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PgReplica(PgServer):
    """A hot standby of `primary` on a port of its own: `pg_basebackup -R` (streaming, a fast checkpoint) of the
    whole cluster, then started; it replays the primary's WAL as it streams in and refuses writes."""

    def __init__(self, primary: PgServer) -> None:
        super().__init__(primary.bin, in_memory=primary.in_memory)
        self.primary = primary

    def start(self) -> PgReplica:
        self._run(str(self.bin / "pg_basebackup"), "-D", str(self.data), "-R", "-X", "stream", "-c", "fast",
                  "--no-sync", "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", self.user)
        self.resume()
        return self

    def replay_paused(self, paused: bool) -> None:
        """Pause (or resume) the replay of the primary's WAL: the replica shows nothing newer until resumed."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()" if paused else "SELECT pg_wal_replay_resume()")


def main() -> None:
    """`python -m tests.support.pg`: start a server, print its URL, wait for Ctrl-C (for manual runs)."""
    import time

    with PgServer() as pg:
        print(pg.url(), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
