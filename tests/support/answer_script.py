"""A responder for the scripted LLM server (tests/support/gateway.py) that plays both kb.answer roles.

Span requests (one per section, sent concurrently) get a quote made from the section text they carry; the
answer request gets a text citing the source ids it was offered. Per-role queues let a test put a failure at
a precise point (`script.then("answer", error(500))`) whatever order the concurrent span calls arrive in.
Token usage is left out of the replies so the gateway estimates it (the bench reports those estimates).
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable

from jsonl_engine.answer.spans import SPAN_SYSTEM
from tests.support.gateway import Reply, Request, chat_reply, stream_chunks

SOURCE_ID = re.compile(r"^\[([0-9a-f]{16}:[^\]\s]+)\]", re.M)
SECTION = re.compile(r"<section>\n(.*)\n</section>", re.S)


def first_words(text: str, words: int = 8) -> str | None:
    """The first `words` words of the section's first line that has them (a verbatim quote)."""
    for line in text.splitlines():
        if len(line.split()) >= 3 and not line.lstrip().startswith("#"):
            return re.match(rf"\s*((?:\S+\s+){{0,{words - 1}}}\S+)", line).group(1)
    return None


def cite_all(ids: list[str]) -> str:
    return " ".join(f"Finding {n} is stated in the filing [{sid}]." for n, sid in enumerate(ids, 1))


def role(request: Request) -> str:
    messages = request.messages
    return "span" if messages and messages[0].get("content") == SPAN_SYSTEM else "answer"


def offered_ids(request: Request) -> list[str]:
    return SOURCE_ID.findall(request.prompt)


class AnswerScript:
    def __init__(self, *, quote: Callable[[str], str | None] = first_words,
                 answer: Callable[[list[str]], str] = cite_all) -> None:
        self.quote = quote
        self.answer = answer
        self.queued: dict[str, deque[Reply]] = {"span": deque(), "answer": deque()}
        self.seen: dict[str, list[Request]] = {"span": [], "answer": []}
        self._lock = threading.Lock()

    def then(self, kind: str, *replies: Reply) -> AnswerScript:
        """Serve these replies to the next requests of `kind` before the generated ones."""
        with self._lock:
            self.queued[kind].extend(replies)
        return self

    def __call__(self, request: Request) -> Reply:
        kind = role(request)
        with self._lock:
            self.seen[kind].append(request)
            if self.queued[kind]:
                return self.queued[kind].popleft()
        if kind == "span":
            match = SECTION.search(request.prompt)
            quote = self.quote(match.group(1)) if match else None
            reply = {"found": bool(quote), "quote": quote or ""}
            return chat_reply(json.dumps(reply), prompt_tokens=None, completion_tokens=None)
        return answer_reply(self.answer(offered_ids(request)), request)


def answer_reply(text: str, request: Request, **stream: object) -> Reply:
    """`text` as the request wants it: an SSE stream of words, or a JSON completion (usage estimated)."""
    if (request.body or {}).get("stream"):
        words = text.split(" ")
        pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
        return Reply(sse=stream_chunks(pieces, usage=None), **stream)  # type: ignore[arg-type]
    return chat_reply(text, prompt_tokens=None, completion_tokens=None)
