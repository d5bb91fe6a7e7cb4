"""The media types the ingest reads (the parser table, parsers.py, maps file extensions to them). A module of its
own, importing nothing: the wire models and `capabilities` name them without loading the ingest."""

PDF = "application/pdf"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"
