"""Gateway overhead: chat calls per second against the scripted loopback server answering instantly.

Same-run baseline: the same requests posted with a bare httpx.AsyncClient (no retries, parsing, usage).

    .venv/bin/python bench/llm_gateway.py [--calls 400] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def run(url: str, reader, calls: int, concurrency: int) -> tuple[float, float]:
    import httpx
    import orjson

    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.llm.usage import Usage

    messages = [{"role": "user", "content": "Reply with a JSON object."}]
    body = orjson.dumps({"model": reader.model, "messages": messages, "max_tokens": 64})
    slots = asyncio.Semaphore(concurrency)

    async with httpx.AsyncClient(base_url=url + "/") as client:
        async def raw() -> None:
            async with slots:
                (await client.post("chat/completions", content=body)).json()

        t0 = time.perf_counter()
        await asyncio.gather(*(raw() for _ in range(calls)))
        t_raw = time.perf_counter() - t0

    gw = Gateway(reader)
    usage = Usage()
    t0 = time.perf_counter()
    await asyncio.gather(*(gw.chat_json(messages, usage=usage, max_tokens=64) for _ in range(calls)))
    t_gw = time.perf_counter() - t0
    await gw.aclose()
    assert usage.calls == calls
    return t_raw, t_gw


def main() -> None:
    from tests.support.gateway import ScriptedLLM, json_reply

    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with ScriptedLLM() as server:
        server.responder = lambda request: json_reply({"found": True, "quote": "x"})
        reader = server.reader(max_concurrency=args.concurrency)
        t_raw, t_gw = asyncio.run(run(server.url, reader, args.calls, args.concurrency))
    print(f"{args.calls} calls, concurrency {args.concurrency}, loopback scripted server")
    print(f"baseline bare httpx : {args.calls / t_raw:7.0f} calls/s")
    print(f"Gateway.chat_json   : {args.calls / t_gw:7.0f} calls/s  ({(t_gw - t_raw) / args.calls * 1e3:+.2f} ms/call)")


if __name__ == "__main__":
    main()
