"""Domain questions (FinanceBench's analyst templates) answered first by what an analyst reads for them
(answer/intents.py): the statement rows of the asked and prior years, the extreme of the cash flow statement's three
totals, or the sentence stating a share of revenue, an acquisition or a quarter's dividend. Real filings."""

from __future__ import annotations

from decimal import Decimal

import pytest

from jsonl_engine.answer.direct import answer_first as synthesize
from jsonl_engine.answer.intents import _stated_share, intent_of
from jsonl_engine.store import Store, open_store
from tests.support.answer_lines import check_lines
from tests.test_answer_first import MORE


def _answer(store: Store, name: str, query: str):
    out = synthesize(store, query, document_ids=[store.doc_ids[name]])  # type: ignore[attr-defined]
    check_lines(out, lambda sid: store.section(sid).text, lambda doc, page: store.page(doc, page).text)
    return out


def _lines(store: Store, name: str, query: str) -> list[str]:
    return _answer(store, name, query).answer.split("\n")


def test_the_templates_are_read_by_their_wording():
    assert intent_of("Does Acme have a reasonably healthy liquidity profile based on its quick ratio for FY 2022? If "
                     "the quick ratio is not relevant to measure liquidity, please state that and explain why.").items[0] \
        == "^total current liabilities"
    assert intent_of("Is Acme a capital-intensive business based on FY2022 data?").items[0].startswith("capex | ")
    assert intent_of("What drove gross margin change as of the FY2022 for Acme?").name == "the gross margin's figures"
    assert intent_of("Does Acme have an improving operating margin profile as of FY2022?").items[0] \
        == "operating margin % | operating income"
    assert intent_of("Has Acme increased its debt on balance sheet between 2022 and the 2021 fiscal period?").prior
    assert intent_of("Among operations, investing, and financing activities, which brought in the most (or lost the "
                     "least) cash flow for Acme in FY2023?").compare
    assert intent_of("Are there any product categories / service categories that represent more than 20% of Acme's "
                     "revenue for FY2022?").shares == "largest"
    assert intent_of("What are major acquisitions that Acme has done in FY2023, FY2022 and FY2021?").shares \
        == "acquisition"
    # a metric question is no template: the computation answers it (answer/compute.py)
    assert intent_of("What is the FY2022 operating margin for Acme?") is None
    assert intent_of("What is Acme's FY2022 revenue?") is None


def test_what_a_sentence_states_for_a_template():
    years = {"2022"}
    segment = "In 2022, our Widgets business segment generated net sales of $4.1 billion, which represented 39% of " \
              "our total consolidated net sales."
    assert _stated_share("largest", segment, years) == Decimal(39)
    # a customer's share is no category's, and a category's no customer's
    government = "We derived 69% of our total net sales from the U.S. Government in 2022."
    assert _stated_share("largest", government, years) is None
    assert _stated_share("first", government, years) == Decimal(69)
    assert _stated_share("first", segment, years) is None
    # a share under 10% names no customer; another year's share is not the asked year's
    assert _stated_share("first", "Shipping is less than 0.5% of sales to customers.", years) is None
    assert _stated_share("first", "In 2019, sales to one customer were 12% of net sales.", years) is None
    assert _stated_share("first", "Revenues from the U.S. government represented 40%, 49% and 51% of consolidated "
                                  "revenues for 2022, 2021 and 2020, respectively.", years) == Decimal(51)
    # an acquisition made, with its price (2) or only its stake (1); acquired assets are no acquisition
    assert _stated_share("acquisition", "In the first quarter of 2022, we closed the Acme Acquisition for cash "
                                        "consideration of approximately $243 million.", years) == Decimal(2)
    assert _stated_share("acquisition", "On March 1, 2022, we acquired 85% of the shares of Acme GmbH.", years) \
        == Decimal(1)
    assert _stated_share("acquisition", "Amortization of acquired intangible assets of $26 million in 2022.",
                         years) is None
    # a legal matter's largest amount, in millions: billions scaled, a plain small amount a note's millions
    assert _stated_share("legal", "The settlement would be approximately $4.3 billion in remediation and $625 "
                                  "million in attorneys' fees.", years) == Decimal(4300)
    assert _stated_share("legal", "Under the settlement agreement the agency agreed to reimburse $307 of those "
                                  "costs.", years) == Decimal(307)
    assert _stated_share("legal", "Advertising expenses totaled $5.2 billion in 2022.", years) is None
    # a tax position's penalties and a pension's settlement are no legal matter
    assert _stated_share("legal", "Accrued interest and penalties on uncertain tax positions were $100 million.",
                         years) is None
    assert _stated_share("legal", "The annuity purchase triggered a pre-tax settlement charge of $242 million.",
                         years) is None


def test_rows_of_the_asked_and_prior_year_lead(dev_kb: Store):
    """Operating margin change: the margin's row with both years and the change the table prints; capital intensity:
    capital expenditure; working capital: current assets and liabilities; restructuring: the income statement's
    row."""
    assert _lines(dev_kb, "3M_2022_10K", "What drove operating margin change as of FY2022 for 3M? If operating margin "
                  "is not a useful metric for a company like this, then please state that and explain why.")[0] \
        .startswith("Operating income margin, 2022: 19.1 %; 2021: 20.8 %; Change: (1.7)% ")
    assert _lines(dev_kb, "3M_2022_10K", "Is 3M a capital-intensive business based on FY2022 data?")[0] \
        .startswith("Purchases of property, plant and equipment (PP&E), 2022: (1,749) ")
    first, second = _lines(dev_kb, "PEPSICO_2022_10K", "Does PepsiCo have positive working capital based on FY2022 "
                           "data?")[:2]
    assert first.startswith("Total Current Assets, 2022: 21,539 ")
    assert second.startswith("Total Current Liabilities, 2022: 26,785 ")
    out = _answer(dev_kb, "PEPSICO_2022_10K", "What is the quantity of restructuring costs directly outlined in "
                  "PepsiCo's income statements for FY2022? If restructuring costs are not explicitly outlined then "
                  "state 0.")
    assert out.answer.startswith("Restructuring and impairment charges, 2022: 411 ")
    assert out.first_claim["why"].startswith("restructuring costs: the row 'Restructuring and impairment charges'")
    assert out.computed is None  # nothing computed: the figures are the rows'


def test_debt_reads_the_long_term_debt_line_not_its_current_portion(dev_kb: Store):
    """"Long-term debt, less current portion" is the line an analyst reads for the debt on the balance sheet, not
    "Current portion of long-term debt" (fewer words beside the item's) nor "Repayment of long-term debt"."""
    from jsonl_engine.answer.intents import _starting

    fit = _starting("long-term debt")
    assert fit("Long-term debt, less current portion") == 3 and fit("Total long-term debt") == 0
    assert fit("Current portion of long-term debt") is None and fit("Repayment of long-term debt") is None
    lines = _lines(dev_kb, "AMCOR_2023_10K", "Has AMCOR increased its debt on balance sheet between FY2022 and "
                   "FY2023?")
    assert lines[0].startswith("Long-term debt, less current portion, June 30, 2023: 6,653; 2022: 6,340 ")
    assert lines[1].startswith("Current portion of long-term debt, June 30, 2023: $ 13; 2022: $ 14 ")


def test_the_consolidated_statement_over_a_guarantors(dev_kb: Store):
    """Two balance sheets print "Total current liabilities" (the consolidated one and a guarantor's condensed one):
    the consolidated, larger one leads, and the other rows are read on its page."""
    lines = _lines(dev_kb, "AMCOR_2023_10K", "Has AMCOR's quick ratio improved or declined between FY2023 and FY2022? "
                   "If the quick ratio is not something that a financial analyst would ask about a company like this, "
                   "then state that and explain why.")
    assert lines[0].startswith("Total current liabilities, June 30, 2023: 4,476; 2022: 5,103 ")
    assert lines[1].startswith("Cash and cash equivalents, June 30, 2023: $ 689; 2022: $ 775 ")
    assert lines[2].startswith("Trade receivables, net of allowance for credit losses")


def test_a_percentage_row_leads_a_margin_profile(dev_kb: Store):
    """A margin profile leads with the margin's percentage row, read where the discussion prints it."""
    assert _lines(dev_kb, "AMCOR_2023_10K", "Does AMCOR have an improving gross margin profile as of FY2023? If gross "
                  "margin is not a useful metric for a company like this, then state that and explain why.")[0] \
        .startswith("Gross profit as a percentage of net sales, 2023: 18.5 %; 2022: 19.4 % ")


def test_an_acquisition_sentence_leads(dev_kb: Store):
    out = _answer(dev_kb, "AMCOR_2023_10K", "What are major acquisitions that AMCOR has done in FY2023, FY2022 and "
                  "FY2021?")
    assert out.claims[0].text.startswith("On August 1, 2022, the Company completed the acquisition of 100% equity")
    assert out.claims[0].id not in out.tables


@pytest.fixture(scope="module")
def filings(tmp_path_factory):
    """A KB of annual reports of the FinanceBench filings (shared/financebench-more): name -> document id."""
    from jsonl_engine.ingest.sync import ingest_paths

    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    names = ["MGMRESORTS_2016_10K", "MGMRESORTS_2021_10K", "LOCKHEEDMARTIN_2017_10K", "LOCKHEEDMARTIN_2016_10K",
             "KRAFTHEINZ_2022_10K", "BOEING_2020_10K", "VERIZON_2019_10K", "NIKE_2016_10K"]
    store = open_store(tmp_path_factory.mktemp("domain") / "kb")
    outcomes = ingest_paths(store, [str(MORE / f"{n}.pdf") for n in names])
    store.doc_ids = {n: o.document_id for n, o in zip(names, outcomes, strict=True)}  # type: ignore[attr-defined]
    yield store
    store.close()


def test_the_cash_flow_totals_of_the_consolidated_table(filings: Store):
    """A guarantor's condensed cash flows also print the three totals (its investing total positive): the table
    compared is the one whose totals are the largest, and synthesize's verdict on the other reads as a plain row."""
    lines = _lines(filings, "MGMRESORTS_2016_10K", "Among operations, investing, and financing activities, which "
                   "brought in the most (or lost the least) cash flow for MGM Resorts in FY2016?")
    assert lines[0].startswith("Most of 3 (2016): Net cash provided by operating activities: $ 1,533,972 ")
    assert sum(line.startswith("Most of") for line in lines) == 1


def test_the_effective_tax_rate_not_the_statutory_one(filings: Store):
    """The reconciliation table prints the statutory rate first and the effective rate last: the effective rate's
    row leads, read in the two years compared."""
    lines = _lines(filings, "MGMRESORTS_2016_10K", "How much has the effective tax rate of MGM Resorts changed between "
                   "FY2015 and FY2016?")
    assert lines[0].startswith("Effective income tax rate, 2016: 1.8%; 2015: 0.6% ")


def test_a_quarters_dividend_stated_per_share_leads_over_the_years_total(filings: Store):
    out = _answer(filings, "MGMRESORTS_2021_10K", "Has MGM Resorts paid dividends to common shareholders in Q3 of "
                  "FY2021?")
    assert "we paid dividends of $0.0025 per share" in out.claims[0].text
    assert out.first_claim["why"].startswith("a sentence stating the dividend per share")


def test_a_quarters_dividend_found_by_a_search_leads(filings: Store):
    """No claim of the answer states a per-share dividend (the cash flow statement's "Dividends paid" leads it): a
    search of the document finds the sentence stating the quarter's (a percentage inside it, "by 2.1% to ...")."""
    from jsonl_engine.answer.intents import _PER_SHARE_DIVIDEND

    assert _PER_SHARE_DIVIDEND.search("the Board increased our quarterly dividend payment by 2.1% to $0.6150 from "
                                      "$0.6025 per share")
    assert not _PER_SHARE_DIVIDEND.search("Dividends paid were $10.0 billion. Earnings were $4.65 per share.")
    out = _answer(filings, "VERIZON_2019_10K", "Has Verizon paid dividends to common shareholders in Q3 of FY2019?")
    assert out.claims[0].text.startswith("During the third quarter of 2019, the Board increased our quarterly "
                                         "dividend payment by 2.1% to $0.6150")


def test_the_largest_categorys_share_of_revenue_leads(filings: Store):
    """Of the sentences stating a segment's share of net sales over the asked 20%, the largest; not the government's
    share (a customer)."""
    out = _answer(filings, "LOCKHEEDMARTIN_2017_10K", "Are there any product categories / service categories that "
                  "represent more than 20% of Lockheed Martin's revenue for FY2017?")
    assert "Aeronautics business segment generated net sales of $20.1 billion, which represented 39%" \
        in out.claims[0].text


def test_the_primary_customers_share_leads(filings: Store):
    out = _answer(filings, "LOCKHEEDMARTIN_2016_10K", "Who are the primary customers of Lockheed Martin as of FY2016?")
    assert out.claims[0].text.startswith("In 2016, 71% of our $47.2 billion in net sales were from the U.S.")


def test_an_acquisitions_price_leads_over_its_stake(filings: Store):
    out = _answer(filings, "KRAFTHEINZ_2022_10K", "What are major acquisitions that Kraft Heinz has done in FY2022?")
    assert "closed the Just Spices Acquisition for cash consideration of approximately $243 million" \
        in out.claims[0].text


def test_the_largest_amount_of_a_legal_matter_leads(filings: Store):
    """Of the sentences about legal matters stating an amount, the largest (a prosecution agreement's $2.51 billion,
    not a contract settlement's $307 million)."""
    out = _answer(filings, "BOEING_2020_10K", "Has Boeing reported any materially important ongoing legal battles "
                  "from FY2020?")
    assert out.claims[0].text.startswith("The Deferred Prosecution Agreement requires that we make payments totaling "
                                         "$2.51")


def test_a_margin_asked_is_read_in_a_percentage_cell_not_beside_a_change(filings: Store):
    """A percentage asked ("gross margin %") is the year's cell printed as a percentage: not an amount row whose
    "%" is the change column beside it ("Gross profit $ 14,971 $ 14,067 6%"), which would disagree with it."""
    lines = _lines(filings, "NIKE_2016_10K", "Does Nike have an improving gross margin profile as of FY2016? If gross "
                   "margin is not a useful metric for a company like this, then state that and explain why.")
    assert lines[0].startswith("Gross margin %, Fiscal 2016: 46.2%; Fiscal 2015: 46.0%")
