"""A small KB for the navigating-strategy tests: a Markdown annual report (one page, a clear section tree) and
a generated multi-page PDF report, ingested once per test module; plus helpers to run a strategy."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPORT_MD = """# Acme Annual Report 2023

## Business

### Overview

Acme Widgets makes and sells industrial widgets in forty countries. The company was founded in 1950.

### Segments

Acme reports two segments: Industrial Widgets and Consumer Gadgets. Industrial Widgets is the larger one.

## Financial Statements

### Income Statement

Net sales were $1,234 million in 2023, up from $1,100 million in 2022. Operating income was $210 million.

### Balance Sheet

Total assets were $5,600 million at year end. Total debt was $1,900 million.

### Cash Flows

Capital expenditures were $95 million in 2023. Dividends paid were $40 million.

## Risk Factors

Demand for widgets depends on industrial production. Supply of steel may be disrupted.
"""


@dataclass
class NavKB:
    store: Any
    md_id: str  # the Markdown report
    pdf_id: str  # the generated PDF report (several pages)
    pdf_pages: int


def build(tmp: Path) -> NavKB:
    from fpdf import FPDF

    from jsonl_engine.ingest.sync import ingest_paths, ingest_text
    from jsonl_engine.store import open_store

    store = open_store(tmp / "kb")
    md = ingest_text(store, REPORT_MD, "Acme Annual Report", media_type="text/markdown")
    pdf = FPDF()
    pdf.set_auto_page_break(True, margin=18)
    topics = [("Item 1. Business", "widgets and gadgets are made in plants"),
              ("Item 7. Management's Discussion and Analysis", "net sales grew because widget prices rose"),
              ("Item 8. Financial Statements", "total assets and liabilities are listed by year"),
              ("Note 5 - Debt", "the revolving credit facility matures in 2027")]
    for title, body in topics:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 14)
        pdf.multi_cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 10)
        for i in range(1, 70):
            pdf.multi_cell(0, 5, f"Sentence {i}: in this part {body}, as the record shows.", new_x="LMARGIN",
                           new_y="NEXT")
    path = tmp / "report.pdf"
    pdf.output(str(path))
    (out,) = ingest_paths(store, [str(path)])
    assert md.error is None and out.error is None, (md.error, out.error)
    return NavKB(store, md.document_id, out.document_id, out.pages)


@pytest.fixture(scope="module")
def nav_kb(tmp_path_factory: pytest.TempPathFactory):
    kb = build(tmp_path_factory.mktemp("nav_kb"))
    yield kb
    kb.store.close()


def run_strategy(name: str, store: Any, gateway_server: Any, *, progress: list | None = None, reader: Any = None,
                 **request: Any) -> Any:
    """Run a registered strategy against the scripted server (a fresh Gateway, closed after)."""
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval.strategies import StrategyRequest, get_strategy

    req = StrategyRequest(query=request.pop("query", "What were net sales in 2023?"), **request)

    def record(stage: str, done: int | None = None, total: int | None = None, message: str | None = None) -> None:
        if progress is not None:
            progress.append((stage, done, total, message))

    async def go() -> Any:
        gw = Gateway(reader or gateway_server.reader())
        try:
            return await get_strategy(name).run(store, req, gw, record)
        finally:
            await gw.aclose()

    return asyncio.run(go())
