"""Headings (with ranks) over page texts -> the section tree, in pre-order, with exact page maps.

A section's text runs from its heading line to the next heading of any rank; pages are joined with "\\n".
Any node whose own text exceeds the chunk size hands it to titled chunk children placed first.
Pages that read as an earnings-call transcript (identity/transcript.py) take their speaker turns as the headings:
the parts ("Prepared remarks", "Questions and answers") and in each, one section per turn, "Name (Role)".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jsonl_engine.identity import transcript
from jsonl_engine.ingest.chunk import MAX_CHARS, chunk_spans
from jsonl_engine.ingest.headings import Heading
from jsonl_engine.ingest.model import ParsedSection

Pos = tuple[int, int]
MIN_PREAMBLE = 200  # (index into pages, offset into that page's text)


@dataclass
class _Node:
    title: str
    rank: float
    page: int
    text: str = ""
    page_map: list[tuple[int, int]] = field(default_factory=list)
    children: list[_Node] = field(default_factory=list)


def slice_pages(pages: list[tuple[int, str]], a: Pos, b: Pos) -> tuple[str, list[tuple[int, int]]]:
    """Text from position a to b (exclusive) across pages, and its page map; outer whitespace trimmed."""
    parts: list[str] = []
    page_map: list[tuple[int, int]] = []
    length = 0
    for index in range(a[0], b[0] + 1):
        number, text = pages[index]
        seg = text[(a[1] if index == a[0] else 0):(b[1] if index == b[0] else len(text))]
        if not seg.strip():
            continue
        if not parts:
            stripped = seg.lstrip()
            seg = stripped
        else:
            parts.append("\n")
            length += 1
        page_map.append((length, number))
        parts.append(seg)
        length += len(seg)
    text = "".join(parts).rstrip()
    return text, [(o, p) for o, p in page_map if o < len(text) or o == 0]


def build_tree(pages: list[tuple[int, str]], headings: list[Heading], doc_title: str,
               max_chars: int = MAX_CHARS) -> list[ParsedSection]:
    """`pages` is [(page number, text)]; `headings` must be in reading order."""
    if not pages:
        return []
    headings = transcript_headings(pages) or headings
    index_of = {number: i for i, (number, _text) in enumerate(pages)}
    starts = [(h, _pos(pages, index_of, h)) for h in headings]
    end: Pos = (len(pages) - 1, len(pages[-1][1]))
    roots: list[_Node] = []
    first = starts[0][1] if starts else end
    text, pmap = slice_pages(pages, (0, 0), first)
    if starts and len(text) < MIN_PREAMBLE:
        starts[0] = (starts[0][0], (0, 0))  # a page header or two before the first heading joins its section
    elif text.strip():
        roots.append(_Node(doc_title, 0, pages[0][0], text, pmap))
    stack: list[_Node] = []
    for i, (heading, pos) in enumerate(starts):
        nxt = starts[i + 1][1] if i + 1 < len(starts) else end
        text, pmap = slice_pages(pages, pos, max(nxt, pos))
        node = _Node(heading.title, heading.rank, heading.page, text, pmap)
        while stack and stack[-1].rank >= heading.rank:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    out: list[ParsedSection] = []
    for ordinal, node in enumerate(roots):
        _flatten(node, None, 1, ordinal, str(ordinal), out, max_chars)
    return out


def transcript_headings(pages: list[tuple[int, str]]) -> list[Heading]:
    """The parts and speaker turns of a transcript as headings (rank 1 and 2), very short turns folded into a
    neighbour; [] when the pages do not read as a transcript."""
    texts = [text for _number, text in pages]
    found = transcript.read(texts)
    if not found.recognised:
        return []
    out: list[Heading] = []
    parts = {part: (page, offset) for part, page, offset in found.parts}
    part = None
    for turn in transcript.merged(found.turns, texts):
        if turn.part != part:
            part = turn.part
            page, offset = min(parts.get(part, (turn.page, turn.start)), (turn.page, turn.start))
            out.append(Heading(pages[page][0], offset, part.capitalize(), 1.0, "transcript"))
        out.append(Heading(pages[turn.page][0], turn.start, turn.title, 2.0, "transcript"))
    return out


def _pos(pages: list[tuple[int, str]], index_of: dict[int, int], heading: Heading) -> Pos:
    index = index_of.get(heading.page)
    return (index, heading.start) if index is not None else (len(pages) - 1, len(pages[-1][1]))


def _flatten(node: _Node, parent: int | None, depth: int, ordinal: int, key: str,
          out: list[ParsedSection], max_chars: int) -> ParsedSection:
    """Append the node's section, then its parts (text over `max_chars`) and its subtree, to `out`."""
    index = len(out)
    section = ParsedSection(key=key, parent=parent, depth=depth, ordinal=ordinal, title=node.title,
                            page_start=0, page_end=0, text=node.text, page_map=node.page_map)
    out.append(section)
    pages: list[int] = [p for _o, p in node.page_map]
    k = 0
    if len(node.text) > max_chars:
        section.text, section.page_map = "", []
        chunks = split_chunks(node.text, node.page_map, max_chars)
        for n, (text, pmap) in enumerate(chunks, start=1):
            title = f"{node.title} (part {n})"
            child = ParsedSection(key=f"{key}.{k}", parent=index, depth=depth + 1, ordinal=k, title=title,
                                  page_start=pmap[0][1], page_end=pmap[-1][1], text=text, page_map=pmap)
            out.append(child)
            pages.extend((child.page_start, child.page_end))
            k += 1
    for child_node in node.children:
        child = _flatten(child_node, index, depth + 1, k, f"{key}.{k}", out, max_chars)
        pages.extend((child.page_start, child.page_end))
        k += 1
    section.page_start = min(pages) if pages else node.page
    section.page_end = max(pages) if pages else node.page
    return section


def split_chunks(text: str, page_map: list[tuple[int, int]], max_chars: int) -> list[tuple[str, list[tuple[int, int]]]]:
    breaks = [o for o, _p in page_map[1:]]
    out: list[tuple[str, list[tuple[int, int]]]] = []
    for start, stop in chunk_spans(text, max_chars, breaks):
        while start < stop and text[start].isspace():
            start += 1
        piece = text[start:stop].rstrip()
        if not piece:
            continue
        stop = start + len(piece)
        first_page = page_map[0][1]
        for offset, page in page_map:
            if offset <= start:
                first_page = page
        pmap = [(0, first_page)] + [(o - start, p) for o, p in page_map if start < o < stop]
        out.append((piece, pmap))
    return out
