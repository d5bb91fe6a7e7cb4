"""Retrieval in documents that are not filings (shared/library-kinds), on whole real documents: a page cut into many
titled sections (an accident report's first page: the title block, "Analysis", "Probable Cause and Findings",
"Findings") does not fill the first passages with blocks that rank by the page alone, so the page answering a
question about the flight gets a place."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_engine.retrieval import retrieve
from jsonl_engine.store import Store, open_store
from tests.conftest import DEV_DIR

KINDS = next((p for p in (DEV_DIR.parent / "library-kinds" / "pdfs", Path("/work/shared/library-kinds/pdfs"))
              if p.is_dir()), None)
ACCIDENT = "20080111X00040"  # a four-page aviation accident report; the departure airport is on p. 3
SMALL = 500_000  # bytes: the library's accident reports, protocols and strategic plans (seconds to ingest)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    from jsonl_engine.ingest.sync import ingest_paths

    if KINDS is None:
        pytest.skip("library-kinds not present")
    store = open_store(tmp_path_factory.mktemp("retrieval_kinds") / "kb")
    # a mixed library, so that the words every accident report prints ("airport") are not rare
    outcomes = ingest_paths(store, sorted(str(p) for p in KINDS.glob("*.pdf") if p.stat().st_size < SMALL))
    assert not [o for o in outcomes if o.error]
    store.doc_ids = {Path(o.path).stem: o.document_id for o in outcomes}  # type: ignore[attr-defined]
    yield store
    store.close()


def test_a_page_of_many_sections_leaves_room_for_the_other_pages(kb: Store):
    # p. 1's blocks matched weakly on their own words and ranked by p. 1's page score: four of the first five passages
    # were p. 1's, and p. 3 ("Departure Point: ...", the airport information) was not among them
    report = kb.doc_ids[ACCIDENT]  # type: ignore[attr-defined]
    found = retrieve(kb, "From which airport did the solo student pilot's Cessna 152 depart before the Madill "
                         "accident?", limit=5).passages
    where = [(p.document_id == report, p.page_start, p.page_end, p.title) for p in found]
    assert all(p.document_id == report for p in found), where
    assert sum(p.page_start == p.page_end == 1 for p in found) <= 2, where
    assert any(p.page_start <= 3 <= p.page_end for p in found), where
    # the block matching best on its own words keeps the first place
    assert found[0].page_start == 1 and found[0].title == "Analysis", where
