"""The stages of lexical retrieval, in the order `retrieval/pipeline.py:retrieve` runs them; each takes the
store and the frozen records of the stages before it, and returns one of its own:

    parse.py       parse(text, scope, limit, unit) -> Ask           the query's phrases, words, names, periods
    route.py       route(store, ask) -> Routing                     the documents the query names (identity/route.py)
    candidates.py  gather(store, ask, routing) -> Found             phrases searched; page and section hits
    score.py       score(store, ask, found) -> Scored               statement cues, candidates fused and ranked
    assemble.py    assemble(store, ask, scored) -> list[Passage]    near-duplicates collapsed, texts, snippets

The constants they weigh with are in `retrieval/weights.py`.
"""
