"""Every constant that decides which passages lexical retrieval returns, and in what order: one place to read
and change them. Each has a line saying what it trades and how it was chosen.

"Chosen: not measured" is said plainly where no commit that set or changed the value records a bench figure
for it (`git log -G '^NAME *=' -- jsonl_engine/retrieval` names the commits; most of these values date from
the first commits of the project, whose messages name no retrieval figure). To change one: edit it here, run
`bench/retrieval.py` (hit@1/3/5/10 and MRR per question type, beside a same-run plain BM25 baseline) and
`bench/kinds.py` (a mixed library), and put the figures in the commit message and on the constant's line;
`bench/compare_outputs.py` will then differ from its baseline, as it should.

The reference, all of these together (main at 0d676ba, and a7bc90b with MIN_PREAMBLE 120: the same figures):
`bench/retrieval.py` on the 65 dev questions gives hit@5 0.892, MRR@10 0.710 scoped to the question's document
(page-BM25 baseline 0.446, 0.303) and hit@5 0.892, MRR@10 0.708 across the 30 documents (baseline 0.246,
0.205).

Routing (which documents a question names by entity, period and kind) weighs with its own constants in
`identity/route.py`; the navigating (LLM) strategies' defaults are in `navigate/`.
"""

from __future__ import annotations

from jsonl_engine.store import SectionWeights

# ---- parse (query.py): how much of a question is read ------------------------------------------------------

MAX_PHRASES = 64
# Search phrases kept per query. Trades: recall of long questions (and their accounting expansions) against
# the FTS work, which grows with each phrase. Chosen: not measured (a bound, 7f2dcc1).
MAX_QUERY_CHARS = 4000
# Characters of a query read. Trades: nothing a question needs against a bound on hostile input. Chosen: not
# measured (a bound, 7f2dcc1).

# ---- candidates (stages/candidates.py): which phrases are searched, where ----------------------------------

MAX_DF = 0.3
# Phrases on more than this share of the library's pages are left out. Trades: their IDF is near zero (little
# rank) and their position lists are the most expensive to read, against the odd question made only of common
# words (KEEP_RAREST catches those). Chosen: not measured (f2244bd).
KEEP_RAREST = 3
# When every phrase is that common, the rarest few are searched anyway. Trades: some answer against the cost
# of common phrases. Chosen: not measured (f2244bd).
MAX_STATEMENT_PHRASES = 20
# A long question searches its rarest phrases only. Trades: statement cost (grows with each phrase) against
# the rank common phrases add (little). Chosen: not measured (4fafd67).
PAGE_CANDIDATES = 200
# Pages the page statement returns. Trades: recall of deep pages (and the document prior's page evidence)
# against fetch and fusion time. Chosen: not measured (f2244bd).
SECTION_CANDIDATES = 200
# Sections the section statement returns. Trades as PAGE_CANDIDATES does. Chosen: not measured (f2244bd).
NAMED_DOCS = 4
# A question naming its issuer searches the pages of that issuer's best-routed documents only. Trades: cost
# (and other issuers' noise) against losing the right filing when routing ranks it fifth. Chosen: not measured
# (d2287ef).
SECTION_DOCS = 2
# Across many documents, section BM25 runs on the documents the prior ranks first (and statement pages are
# boosted in them). Trades: a second statement over the whole library against sections of a third document.
# Chosen: not measured (f2244bd).
SECTION_WEIGHTS = SectionWeights(title=4.0, ancestors=1.5, text=1.0)
# BM25 weight of each section field. Trades: a section titled with the question's words ("Capital
# expenditures") over prose that only mentions them, against titles that match generically ("Notes"). Chosen:
# not measured (7f2dcc1).
W_YEAR = 0.25
# Document prior by names: a year on a cover page counts this much of a name. Trades: picking the filing of
# the named year against covers that also carry filing and share-count dates of other years. Chosen: not
# measured (4fafd67).
NAME_MAX_DF = 0.5
# A capitalised word on more than this share of documents is a financial term ("Adjusted"), not a name.
# Trades: false names against an issuer that files most of a small library. Chosen: not measured (d2287ef).
COVER_MAX_DF = 0.2
# Document prior without names: the query words on at most this share of first pages. Trades: words that tell
# documents apart against the few left in a question. Chosen: not measured (4fafd67).
MIN_DF_LIMIT = 2.0
# The two document-frequency limits above never fall below two documents. Trades: a name or word on two
# documents of a tiny library still counts, against a share that means nothing in it. Chosen: not measured
# (4fafd67).

# ---- score (stages/score.py, rank.py): how candidates are fused --------------------------------------------

PAGES_TO_SECTIONS = 30
# The sections lying on the best pages join the candidates (unit "section"). Trades: a table page split into
# small sections reaches the passages, against sections to load and score. Chosen: not measured (f2244bd).
SPAN_BACK = 3
# A section starting at most this many pages before such a page counts as on it. Trades: long sections reach
# the candidates against reading further back. Chosen: not measured (f2244bd).
MIN_PREAMBLE = 120
# An internal section is a passage only when its own text (before its children) is longer than this. Trades:
# real preambles (a title and one short sentence, "Probable Cause and Findings" and its finding, is content)
# against heading lines posing as passages. Chosen: 200 in 4fafd67, 120 since 8f7bbe1 for an accident report's
# findings (tests/test_answer_first.py); not measured on a bench.
W_SECTION = 0.25
# Fusion: the section's own column-weighted BM25, scaled by the best. Trades: precise titled sections against
# tables split into sections too small for BM25. Chosen: 0.45 -> 0.25 in f2244bd; not measured.
W_PAGE = 0.55
# Fusion: the best page a section lies on (whole-page BM25, scaled by the best). Trades: tables and pages
# carrying the figures against the section's own match. Chosen: not measured (7f2dcc1).
W_DOC = 0.7
# Fusion: the document prior, when more than one document is in scope. Trades: staying in the filing the
# question names against a better passage elsewhere. Chosen: 0.35 -> 0.7 in f2244bd; not measured.
W_STATEMENT = 0.75
# Added to a page's scaled score when it is a financial statement the question needs (cues.py). Trades: the
# table holding a metric over prose discussing it. Chosen: 0.5 -> 0.75 in 4fafd67; not measured.
W_NAMED_STATEMENT = 1.0
# Added instead of W_STATEMENT when the question names the statement to read ("... outlined in its income
# statements", "based on the balance sheet"): the question says where the figure is printed, so the statement page
# outranks the note discussing the same item (a restructuring note's pages). Trades: the statement the question
# names against the notes and discussion matching more of its words. Chosen: 1.0 (retpass), measured in
# process on the bench KBs, scoped, the evidence page among the first 5 passages: with W_STATEMENT for it figures5
# 37 -> 37 of 48, with 1.0 38 (the other sets unchanged).
W_TITLED = 0.1
# Added to a section whose heading is made of the question's own words and the labels of the item it asks for
# (stages/score.titled_as_asked: "Employees" for "how many people worked for ..."), off statement pages (their cues
# lift them): a heading naming the asked item over pages matching by the words a document repeats on most of its
# pages (its period, its name). Trades: the section named as asked against a page matching more of the question.
# Chosen: 0.1 (retpass), in process on the bench KBs, scoped, the evidence page among the first 5 passages, with the
# named statement and "workforce": dev 60, figures 74, figures3 53, figures5 38, figures6 35, figures10 37,
# figures7 26 (main 59, 74, 53, 37, 33, 35, 26). With any phrase retrieval adds counted as asked: 0.05 kept figures6
# at 33, 0.15 cost dev (59) and figures3 (52), and 0.1 cost dev one cited evidence page ("debt" adds "short term
# borrowings": that heading rose over a cover page); on statement pages too, 0.1 cost figures5 one (a cash flow
# statement's groups of rows, "From operating activities", filled the first places).
W_SAME_PAGE = 0.4
# Taken off a section that shows no page a better section does not show already and whose own match is weak
# (SPREAD_SECTION; rank.spread): a page cut into sections by its headings (a statement's groups of rows, a report's
# labelled blocks) filled the first places with blocks ranking by the page alone. Trades: the other pages a question
# may be answered on reaching the first places, against the page's further sections (kb.synthesize reads a statement
# page's other sections with the passage reaching it). Chosen: 0.2 on a statement page the cues lift only (4fafd67
# .. 48b5b03); 0.4 on every page since, with SPREAD_SECTION 0.6, measured in process on the bench KBs, scoped, the
# evidence page among the first 5 passages (bench/synthesize.py's ceiling): dev 58 -> 59 of 65, figures 74 -> 74 of
# 78, figures3 53 -> 53 of 60, figures5 35 -> 37 of 48, kb.synthesize's first-claim and in-answer figures, citations
# and computed answers unchanged but one more first claim (dev); the kinds library corpus-wide, hit@5 (bench/kinds.py):
# protocol 0.808 -> 0.846, accident 0.900 -> 1.000, agency 0.840 -> 0.840, 10-K 0.870 -> 0.891. Every section on a
# shown page lowered (whatever its match) raised the ceiling further (dev 62, figures 76, figures5 40; agency 0.880)
# but cost kb.synthesize its answer where the figures' table was a page-mate of the heading ranked first (figures:
# first claim 76 -> 73 of 78, in the answer 78 -> 75); a step by the section's weakness, W * (1 - match), or
# deferring page-mates a few places instead of lowering them, cost it too.
SPREAD_SECTION = 0.6
# rank.spread lowers only sections whose own match (scaled by the best section's) is below this. Trades: sections
# riding on their page's score (a statement's title, a group of rows, a report's title block) against a section
# holding the figures on a page its heading reached first. Chosen: 0.5 with the spread on lifted pages only; 0.6
# since (W_SAME_PAGE's figures); 0.75 and 0.9 cost kb.synthesize first claims (figures 76 -> 75 and 74 of 78, dev
# 16 -> 15 of 22).
W_COVER = 0.5
# Document prior without names: the first pages matched by the query's own words. Trades: what a document is
# (its cover) against where the matching text is (W_PAGES). Chosen: not measured (f2244bd).
W_TITLE = 0.2
# Document prior: the share of the query's words in the document title. Trades: a title naming the question's
# subject against generic titles ("Annual Report"). Chosen: not measured (f2244bd).
W_PAGES = 0.3
# Document prior: the sum of the document's best page scores (with names: the part of the name score the pages
# may move). Trades W_COVER / W_TITLE (what the document is) against where the matching text is. Chosen: not
# measured (f2244bd).
DOC_TOP_PAGES = 3
# The best pages summed per document for W_PAGES. Trades: one lucky page against documents long on a topic.
# Chosen: not measured (7f2dcc1).
SCORE_DIGITS = 6
# Scores are rounded to this many digits, then ties break by id. Trades: an order that is a pure function of
# the KB and the query (not of floating-point noise between backends) against telling apart scores closer than
# this. Chosen: not measured (7f2dcc1).
# (Which pages are a financial statement, judged at ingest: identity/statements.py, HEAD_CHARS and the others.)

# ---- assemble (stages/assemble.py, dedupe.py, snippet.py): passages out of the ranking ---------------------

POOL_FACTOR, POOL_EXTRA = 4, 8
# The ranking is cut to limit * POOL_FACTOR + POOL_EXTRA before near-duplicates collapse. Trades: a full page
# of results after collapsing boilerplate against texts loaded. Chosen: not measured (f2244bd).
PAGE_BATCH_EXTRA = 4
# Page texts (unit "page") and section texts are loaded limit + PAGE_BATCH_EXTRA at a time, as collapsing needs
# them. Trades: round trips against long texts loaded for nothing. Chosen: not measured (d2287ef); for sections
# (limit 10, a pool of 48) collapsing reads 10 or 11 texts for 63 of the 65 dev questions scoped, 10 to 12 for 52
# of them corpus-wide (at most 37).
DUPLICATE_JACCARD = 0.8
# Two passages whose word 4-shingles overlap this much (Jaccard) are near-duplicates: the better one is kept.
# Trades: repeated boilerplate against statements of different periods (numbers stay in the shingles). Chosen:
# not measured (7f2dcc1).
SHINGLE_WORDS = 4
# Words per shingle. Trades: longer shingles tell passages with shared phrases apart, shorter ones catch
# reworded boilerplate. Chosen: not measured (7f2dcc1).
DUPLICATE_SAMPLE_CHARS = 6000
# Characters of a passage compared. Trades: boilerplate shows early, against time on long sections. Chosen:
# not measured (d2287ef).
SNIPPET_CHARS = 240
# Length of a passage's snippet. Trades: context around the terms against the size of each result. Chosen: not
# measured (f2244bd).
SNIPPET_TERMS = 32
# Query terms looked for in a snippet. Trades: nothing a question needs against the size of one pattern.
# Chosen: not measured (a bound, f2244bd).
SNIPPET_CLUSTER = 0.8
# Terms within SNIPPET_CHARS * this of each other count as one cluster. Trades: the most distinct terms in
# view against room around them. Chosen: not measured (f2244bd).
SNIPPET_LEAD = 5
# The snippet starts SNIPPET_CHARS // SNIPPET_LEAD characters before its cluster. Trades: the sentence leading
# to the terms against the text after them. Chosen: not measured (f2244bd).
MIN_USEFUL = 200
# kb.context's budget (budget.py): a passage is clipped only when this many characters of budget remain, else
# dropped whole. Trades: stubs against a last passage lost. Chosen: not measured (f2244bd).
