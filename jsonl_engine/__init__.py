"""jsonl-engine: a document knowledge base served as a JSON-lines daemon."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
