"""kb.synthesize on questions asked in an analyst's everyday words, on real filings: the words map to the labels
filings print the item under (vocabulary.py ANALYST_ITEMS: "bring in per paying member" is the average monthly
revenue per paying membership, "buy back its own shares" the repurchases of common stock, "a night's stay" the
average daily rate), and the row printing that label leads; a verb of the question ("pay", "spend") asks for an
amount; a row counting things is not the amount a question asking how much wants; a region's row in a table
whose header names another item is not the asked item's."""

from __future__ import annotations

import pytest

from jsonl_engine.answer.direct import answer_first as synthesize
from jsonl_engine.answer.order import asks_kind
from jsonl_engine.answer.qualifier import asked, named_in
from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.synthesize import asks_for_amount
from jsonl_engine.retrieval.query import parse
from jsonl_engine.store import Store, open_store
from jsonl_engine.vocabulary import ACCOUNTING, ANALYST_ITEMS, EXPANSIONS
from tests.support.answer_lines import answered
from tests.support.kb import ingest_named
from tests.test_answer_first import MORE


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    """Quarterly and annual reports and an earnings release of the FinanceBench filings."""
    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    names = ["NETFLIX_2023Q2_10Q", "MGMRESORTS_2021_10K", "JPMORGAN_2022Q1_10Q", "BESTBUY_2023Q4_EARNINGS",
             "LOCKHEEDMARTIN_2018_10K", "3M_2021_10K", "JOHNSON_JOHNSON_2023Q1_EARNINGS",
             "ACTIVISIONBLIZZARD_2022_10K"]
    store = ingest_named(open_store(tmp_path_factory.mktemp("analyst") / "kb"), MORE, names)
    yield store
    store.close()


def _first(store: Store, name: str, query: str) -> tuple[str, str]:
    """(the first line of the answer, why its claim leads), every line checked verbatim."""
    out = answered(store, name, query)
    return out.answer.split("\n")[0], out.first_claim["why"]


def test_the_everyday_words_map_to_the_printed_labels():
    # retrieval searches the printed labels too; the accounting terms alone stay the qualifier's item words
    assert "repurchases of common stock" in EXPANSIONS[("buy", "back")]
    assert "average monthly revenue per" in ANALYST_ITEMS[("per", "paying", "member")]
    assert "average daily rate" in ANALYST_ITEMS[("night",)]
    assert ("night",) not in ACCOUNTING and ("buy", "back") not in ACCOUNTING
    phrases = parse("Roughly how many people worked for Acme at the end of 2020?").phrases
    assert ("employees",) in phrases
    # "United States" is still a name the question puts on its item, and a table prints it "U.S."
    quals = asked("What did Acme's Widgets segment sell to customers in the United States in the second quarter of "
                  "2023?", {"Acme Corp, 10-K"})
    assert [q.text for q in quals] == ["Widgets", "United States"]
    assert named_in(quals, "U.S. 3,759 3,225") and not named_in(quals, "US GAAP")


def test_a_verb_asks_for_an_amount_and_how_much_is_no_count():
    assert asks_for_amount("What did Acme pay to buy back its own stock over the first half of 2023?")
    assert asks_for_amount("What did Acme's Widgets business sell in the United States in 2023?")
    assert not asks_for_amount("At what yield were the notes that Acme sold in May 2023 priced?")
    assert asks_kind("How much cash did Acme spend repurchasing its shares?") == "money"
    assert asks_kind("How much did Acme hand back to shareholders through buybacks?") == "money"
    assert asks_kind("How many shares did Acme repurchase, and how much did it spend?") == "count"


def test_per_paying_member_is_the_average_revenue_per_membership(kb: Store):
    # main led with "Average paying memberships 74,985": the words "paying member" alone
    line, why = _first(kb, "NETFLIX_2023Q2_10Q", "What did Netflix bring in per paying member each month in the "
                       "United States and Canada in the second quarter of 2023?")
    assert line.startswith("Average monthly revenue per paying membership $ 16.00 ")
    assert "its label names the asked line item" in why


def test_buying_back_its_own_shares_is_the_repurchases_of_common_stock(kb: Store):
    # main led with a sentence on foreign exchange: "pay" asked no amount, "buy back" named no printed row
    line, why = _first(kb, "NETFLIX_2023Q2_10Q", "How much did Netflix pay to buy back its own shares in the six "
                       "months ended June 30, 2023?")
    assert line.startswith("Repurchases of common stock, Six Months Ended June 30, 2023: (1,045,247)")
    assert "on the cash flow statement" in why  # what was paid for them is a financing line


def test_a_nights_stay_is_the_average_daily_rate(kb: Store):
    # main led with the segment's EBITDAR: "night" and "stay" are no words of the page
    line, why = _first(kb, "MGMRESORTS_2021_10K", "What did a night's stay cost on average at MGM's Las Vegas "
                       "Strip resorts in 2020?")
    assert line.startswith("Average Daily Rate (ADR), 2020: $ 161 ")
    assert "its label names the asked line item" in why


def test_how_much_cash_is_not_the_number_of_shares(kb: Store):
    # main led with "Total number of shares of common stock repurchased, 2022: 18.1"
    line, why = _first(kb, "JPMORGAN_2022Q1_10Q", "How much cash did JPMorgan spend buying back its common stock "
                       "in the first quarter of 2022?")
    assert line.startswith("Aggregate purchase price of common stock repurchases, 2022: $ 2,500 ")
    line, why = _first(kb, "JPMORGAN_2022Q1_10Q", "How many shares of common stock did JPMorgan buy back in the "
                       "first quarter of 2022?")
    assert line.startswith("Total number of shares of common stock repurchased, 2022: 18.1 ")


def test_the_cash_its_operations_generated_and_its_order_book(kb: Store):
    # main led with the balance sheet's cash, and with a sentence on why the backlog grew
    line, _ = _first(kb, "ACTIVISIONBLIZZARD_2022_10K", "How much cash did Activision Blizzard's operations generate "
                     "in 2022?")
    assert line.startswith("Net cash provided by operating activities, 2022: 2,220 ")
    line, why = _first(kb, "LOCKHEEDMARTIN_2018_10K", "How big was Lockheed Martin's order book at the end of 2018?")
    assert line.startswith("Backlog at year-end, 2018: ")
    assert "its label names the asked line item" in why


def test_what_a_company_owes_and_its_profit_per_share(kb: Store):
    # main led with an exhibit's credit agreement and with gross profit
    line, why = _first(kb, "LOCKHEEDMARTIN_2018_10K", "How much did Lockheed Martin owe its lenders at the end of "
                       "2018?")
    assert line.startswith("Long-term debt, net, 2018: $ 12,604 ")
    line, why = _first(kb, "BESTBUY_2023Q4_EARNINGS", "How much profit per share did Best Buy make over the whole of "
                       "fiscal 2023?")
    assert line.startswith("Diluted earnings per share, ") and "$ 6.29" in line
    assert "its label names the asked line item" in why


def test_what_a_company_sold_in_a_region_is_its_net_sales_table_row(kb: Store):
    # main led with "Americas 56,000 943 5,752" (employees, capital spending, PP&E) and, asked for Asia Pacific,
    # with its PP&E row "Asia Pacific 1,582 1,662", whose lead-in mentions net sales in passing
    line, why = _first(kb, "3M_2021_10K", "How much did 3M sell in the Americas in 2020?")
    assert line.startswith("Americas, 2020: $ 16,525 ")
    line, why = _first(kb, "3M_2021_10K", "How much did 3M sell in the Asia Pacific region in 2021?")
    assert line.startswith("Asia Pacific, 2021: 10,600 ")
    assert "it names the qualifier the question asks for" in why


def test_a_segments_name_over_its_rows_titles_them():
    text = "Sales to customers\nWidgets (1)\n U.S. 3,759 3,225 16.6\n International 3,722 3,746 (0.6)\n" \
           "Capital expenditures (91) (80) (78)\nOther assets 12 14 15\n"
    rows = {text[s.start:s.end].split(" 3")[0].strip(): s for s in segment(text) if s.kind == "row"}
    group = rows["U.S."].group
    assert group is not None and text[group[0]:group[1]] == "Widgets (1)"
    assert "Capital expenditures (91) (80) (78)" in [text[s.start:s.end] for s in segment(text) if s.kind == "row"]


def test_what_a_segment_sold_in_the_united_states_is_its_us_row(kb: Store):
    # main answered "Not in the documents searched: United States." (the release prints "U.S."), then a total
    out = synthesize(kb, "What did Johnson & Johnson's Pharmaceutical segment sell in the United States in the first "
                     "quarter of 2023?", document_ids=[kb.doc_ids["JOHNSON_JOHNSON_2023Q1_EARNINGS"]])  # type: ignore[attr-defined]
    assert out.answer.startswith("U.S. 7,023 6,632 ")
    assert out.not_in_kb == []
