"""The practical floor: a minimal Python read-line / orjson / write-line echo loop speaking our envelope."""

import sys

import orjson

out = sys.stdout.buffer
out.write(orjson.dumps({"id": None, "event": "ready", "data": {"protocol": 1}}) + b"\n")
out.flush()
for line in sys.stdin.buffer:
    request = orjson.loads(line)
    out.write(orjson.dumps({"id": request["id"], "event": "result", "data": {"name": "echo"}}) + b"\n")
    out.write(orjson.dumps({"id": request["id"], "event": "done", "status": "ok", "elapsed_ms": 0.0}) + b"\n")
    out.flush()
