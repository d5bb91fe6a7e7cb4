"""Prompt texts of the navigating strategies (kept together so their wording can be compared and tuned)."""

from __future__ import annotations

OUTLINE_LEGEND = ("Each outline line is: <id> <title> [p<first page>-<last page>] followed by a short summary "
                  "after ':' when there is one; '(+N)' marks a section whose N subsections are not shown.")

SELECT_SYSTEM = (
    "You choose, from a document outline, the sections whose text answers a question. " + OUTLINE_LEGEND + "\n"
    "Pick at most {limit} sections, most relevant first; prefer the most specific section (a financial "
    "statement, a note, a table) over a broad parent. Give each pick a confidence between 0 and 1 that its "
    "text answers the question.\n"
    'Reply with a JSON object only: {{"sections": [{{"id": "<id exactly as shown>", "confidence": 0.8}}]}}. '
    'If no section can answer, reply {{"sections": []}}.'
)

SELECT_USER = "Question: {query}\n\n{outline}"
SLICE_USER = ("Question: {query}\n\nThis is part {part} of {parts} of the outline (the other parts are shown "
              "separately: pick only from this part, or nothing).\n\n{outline}")

STRICT_JSON = ('That reply was not usable. Reply again with ONLY a JSON object, no prose and no code fences, '
               'exactly of the form {"sections": [{"id": "<id>", "confidence": 0.7}]} '
               '(or {"sections": []} if nothing answers).')

AGENT_SYSTEM = (
    "You find the sections of a document that answer a question by navigating its outline. "
    + OUTLINE_LEGEND + "\n"
    "Each turn reply with exactly ONE action, as a JSON object and nothing else:\n"
    '  {{"action": "outline"}}  show the top-level outline again\n'
    '  {{"action": "expand", "section_id": "<id>"}}  list the subsections of a section\n'
    '  {{"action": "read", "section_id": "<id>"}}  read a section\'s text\n'
    '  {{"action": "done", "picks": [{{"id": "<id>", "confidence": 0.8}}]}}  finish: the sections that '
    "answer, best first, at most {limit}, each with a confidence between 0 and 1 ([] if none answers)\n"
    "Use ids exactly as shown. You have at most {max_hops} actions; finish with done before they run out. "
    "Read a section before picking it when its title and summary leave doubt."
)
AGENT_USER = "Question: {query}\n\nTop-level outline:\n{outline}"
AGENT_BAD_ACTION = ('Not a valid action ({problem}). Reply with ONE JSON object such as '
                    '{{"action": "expand", "section_id": "<id>"}} or {{"action": "done", "picks": []}}.')
AGENT_LAST_HOP = 'This is your last action: reply with {"action": "done", "picks": [...]} now.'

PAGE_SYSTEM = (
    "You answer a question from a document by looking at its structure and reading its pages, then cite the "
    "pages that support your answer. " + OUTLINE_LEGEND + "\n"
    "Each turn reply with exactly ONE tool call, as a JSON object and nothing else:\n"
    '  {{"tool": "structure"}} or {{"tool": "structure", "section_id": "<id>"}}  the outline (of a section)\n'
    '  {{"tool": "pages", "start": 5, "end": 7{doc_arg}}}  read pages 5 to 7 (at most {max_pages} pages a call)\n'
    '  {{"tool": "done", "answer": "<answer>", "cited_pages": [[5, 6]], "confidence": 0.8}}  finish\n'
    "Citation discipline: cite the FEWEST page ranges that support the answer, ideally ONE range. Put your doubt "
    "in confidence (0 to 1), never in extra ranges. A low-confidence answer still commits to its single best "
    "range. Cite only pages you have read. If the document does not answer the question, say so in answer and "
    "cite nothing (cited_pages: []).\n"
    "You have at most {max_hops} tool calls; call done before they run out."
)
PAGE_USER = "Question: {query}\n\n{documents}Structure:\n{outline}"
PAGE_LAST_HOP = ('This is your last tool call: reply with {"tool": "done", "answer": "...", "cited_pages": '
                 '[[<start>, <end>]], "confidence": <0..1>} now.')
PAGE_BAD_CALL = ('Not a valid tool call ({problem}). Reply with ONE JSON object such as '
                 '{{"tool": "pages", "start": 3, "end": 4}} or {{"tool": "done", "answer": "...", '
                 '"cited_pages": [[3, 3]], "confidence": 0.6}}.')
