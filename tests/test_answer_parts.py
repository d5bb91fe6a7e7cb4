"""A sentence counting a part of a whole (issue 24), on a real filing (shared/financebench-more), checked to fail
without the rule: "approximately 16,300 employees ... in North America were covered by collective bargaining
agreements" counts some of the employees; the sentence giving the whole leads when the question names no part."""

from __future__ import annotations

from jsonl_engine.answer.order import part_words
from tests.test_answer_items import first_line
from tests.test_answer_rules import filing_kb, needs_more


def test_a_count_of_a_part_is_told_from_the_whole():
    # the clause of the first count states a part: a place after the things counted, "were covered by", "of our"
    assert part_words("As of December 31, 2020, approximately 900 employees in Europe were covered by unions.")
    assert part_words("Approximately 1,200 of our employees are union members.")
    assert part_words("About 5,000 people, which constitute 20% of our total workforce, work in stores.")
    # the whole, its part after ", respectively, of which" or ", of whom"; a date, a year and money are no count
    assert part_words("As of June 30, 2021 and 2020, we had approximately 9,000 and 8,000 employees, respectively, "
                      "of which approximately 1,000 were located in Canada.") is None
    assert part_words("As ofMarch 31, 2021, we had 4,100 employees, of whom 300 work in Mexico.") is None
    assert part_words("We repurchased $500 million of our common stock in Fiscal 2021.") is None
    assert part_words("Revenue grew 4% in the First quarter.") is None


@needs_more
def test_the_whole_workforce_leads_over_a_part_of_it(tmp_path):
    store = filing_kb(tmp_path, "COCACOLA_2016_10K")
    line, out = first_line(store, "COCACOLA_2016_10K", "How many employees did Coca-Cola have at the end of 2016?")
    assert "100,300" in out.claims[0].text
    assert "counts a part of a whole the question does not name" not in out.first_claim["why"]
    # naming the part asks it: the covered employees' sentence is no longer judged a part
    line, out = first_line(store, "COCACOLA_2016_10K", "How many Coca-Cola employees in North America were "
                           "covered by collective bargaining agreements at the end of 2016?")
    assert "16,300" in out.claims[0].text
    store.close()


@needs_more
def test_what_a_member_generates_per_month_is_the_monthly_revenue_per_membership(tmp_path):
    # "generate for <company>" asks its revenue, "per month" is printed "monthly": the row "Average monthly revenue
    # per paying membership" leads over "Average paying memberships" in the same region's table
    store = filing_kb(tmp_path, "NETFLIX_2021_10K")
    line, out = first_line(store, "NETFLIX_2021_10K", "What did a paying member in Latin America generate for "
                           "Netflix per month, on average, in 2021?")
    assert out.claims[0].text.startswith("Average monthly revenue per paying membership")
    store.close()


@needs_more
def test_will_of_an_instruments_terms_is_no_plan(tmp_path):
    # "carryforwards ... of $81 million, of which $76 million will expire in ...": "will expire" states the terms
    # of what is held, not a plan; the sentence is not demoted as one and leads
    from jsonl_engine.answer.order import _PLANNED, asks_share

    assert not _PLANNED.search("The Notes will be exchangeable at an initial exchange price of $80.00 per share.")
    assert not _PLANNED.search("The 2030 notes will mature on May 1, 2030.")
    assert _PLANNED.search("We will invest $2 billion in new stores.")
    # "what share price" asks a price, not a share
    assert not asks_share("At what share price can holders exchange the notes?")
    assert asks_share("What share of revenue came from Europe?")
    store = filing_kb(tmp_path, "BESTBUY_2018_10K")
    line, out = first_line(store, "BESTBUY_2018_10K", "How much in net operating loss carryforwards from "
                           "international operations did Best Buy have at the end of fiscal 2018?")
    assert "$81 million" in out.claims[0].text
    store.close()
