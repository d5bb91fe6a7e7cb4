"""Document identity: what a document is (kind, title, issuer, period, dates, identifiers), read from its own
pages; the card ingest stores, the routing of a question to the documents it names, the periods synthesis keeps
apart, and the filters of kb.documents. Below ingest and retrieval, above the store (it reads cards and pages)."""
