"""LLM gateway: readers.py (named readers, registry), gateway.py (httpx chat-completions client),
    jsonparse.py (tolerant JSON), usage.py (Usage, token estimate). Import submodules lazily: httpx is heavy."""
