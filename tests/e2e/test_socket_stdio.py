"""stdin and stdout as one socket (socat EXEC:, inetd): a client that reads slowly gets every event."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import orjson

from tests.support.daemon import ROOT


def test_a_slow_reader_on_a_shared_socket_gets_every_response(tmp_path):
    ours, theirs = socket.socketpair()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JSONL_ENGINE_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "jsonl_engine", "--kb", str(tmp_path / "kb")],
                            stdin=theirs, stdout=theirs, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    theirs.close()
    try:
        count = 3000  # about 10 MB of results: far more than the socket buffers hold while we do not read
        ours.sendall(b"".join(b'{"id":%d,"method":"capabilities"}\n' % i for i in range(count)))
        time.sleep(1.0)  # let the daemon fill the buffers and hit a full socket
        ours.shutdown(socket.SHUT_WR)
        ours.settimeout(60)
        data = bytearray()
        while chunk := ours.recv(1 << 16):
            data += chunk
        events = [orjson.loads(line) for line in data.splitlines()]
        done = {e["id"] for e in events if e.get("event") == "done"}
        assert done == set(range(count))
        assert proc.wait(timeout=30) == 0
    finally:
        ours.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
