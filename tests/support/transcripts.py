"""Earnings-call transcripts of invented companies, written as PDFs with fpdf2, for tests and bench/transcripts.py.

The shared data holds no transcript. These are written the way published transcripts are (a title line, the call
date, a participants list, an operator, prepared remarks by the CEO and the CFO with figures, a question-and-answer
session with analysts of banks), in four layouts seen in the wild:

- "own_line": the speaker's name on its own line above the turn; "Company Participants" / "Conference Call
  Participants" lists with "Name - Role"; a "Question-and-Answer Session" line.
- "dash": "Name -- Role" (an analyst: "Name -- Bank -- Analyst") on its own line; "Prepared Remarks:" and
  "Questions and Answers:" parts; a "Call participants:" list at the end.
- "caps": "NAME:" inline at the start of the turn's first paragraph; "CORPORATE PARTICIPANTS" list; "PRESENTATION"
  and "QUESTIONS AND ANSWERS" parts; a title naming the fiscal quarter only ("Third Quarter Fiscal 2024 Earnings
  Conference Call") with the company on the next line.
- "comma": "Name, Role:" inline; the title names only the quarter, the company is named by the operator's welcome.

Every figure a question asks about is different from call to call (same sentences, other numbers), as in a real
company's series of calls. Companies, people and banks are invented.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

LAYOUTS = ("own_line", "dash", "caps", "comma")
ORDINALS = ("first", "second", "third", "fourth")
BANKS = ("Harbor Street Securities", "Lindqvist & Partners", "Copperfield Capital Markets", "Aldgate Brothers",
         "Pinecrest Research", "Marlow Bay Bank")
FIRST = ("Maren", "Tobias", "Ingrid", "Caspar", "Odile", "Rafferty", "Sunniva", "Ewan", "Priya", "Lorcan",
         "Henrike", "Dashiell", "Anouk", "Bertil", "Celeste", "Idris", "Wendeline", "Jarrah", "Solveig", "Matthias",
         "Yevgenia", "Cormac", "Linnea", "Osric")
LAST = ("Vance", "Okafor", "Thorsby", "Merriweather", "Lindahl", "Quaresma", "Haverford", "Strand", "Belcourt",
        "Ashdown", "Kowalczyk", "Pellegrini", "Rademaker", "Fairbairn", "Oyelaran", "Tregarth", "Duquesne",
        "Nakashima", "Virtanen", "Abernethy", "Castellanos", "Wolstenholme", "Ferreira", "Lundqvist")


@dataclass
class Company:
    name: str  # as the title writes it ("Northwind Robotics, Inc.")
    short: str  # as people say it ("Northwind Robotics")
    ticker: str
    product: str  # what it sells ("warehouse robots")
    fiscal_end_month: int = 12  # the month its fiscal year ends
    ceo: str = ""
    cfo: str = ""
    ir: str = ""
    analysts: list[tuple[str, str]] = field(default_factory=list)  # (name, bank) of those covering it


@dataclass
class Call:
    company: Company
    quarter: int
    fiscal_year: int
    layout: str
    day: date
    analysts: list[tuple[str, str]] = field(default_factory=list)  # (name, bank)
    facts: dict[str, str] = field(default_factory=dict)  # the figures questions ask about, as written

    @property
    def label(self) -> str:
        return f"Q{self.quarter} {self.fiscal_year}"


COMPANIES = (
    Company("Northwind Robotics, Inc.", "Northwind Robotics", "NWRB", "warehouse robots"),
    Company("Meridian Orchard Foods Corporation", "Meridian Orchard", "MOFC", "packaged fruit snacks", 6),
    Company("Kestrel Cloudworks Ltd.", "Kestrel Cloudworks", "KCLW", "data-center software", 9),
)


def _people(rng: random.Random, n: int, taken: set[str]) -> list[str]:
    """`n` people whose first and last names are both new to `taken` (which records them)."""
    out = []
    while len(out) < n:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if first not in taken and last not in taken:
            taken.update((first, last))
            out.append(f"{first} {last}")
    return out


def staff(companies: tuple[Company, ...] = COMPANIES, seed: int = 7) -> tuple[Company, ...]:
    """The companies with their CEO, CFO, investor-relations head and the four analysts who cover each (distinct
    people; an analyst's bank is fixed)."""
    rng = random.Random(seed)
    taken: set[str] = set()
    out = []
    for c in companies:
        ceo, cfo, ir, *covering = _people(rng, 7, taken)
        out.append(Company(c.name, c.short, c.ticker, c.product, c.fiscal_end_month, ceo, cfo, ir,
                           list(zip(covering, rng.sample(BANKS, 4), strict=True))))
    return tuple(out)


def call_day(company: Company, quarter: int, fiscal_year: int) -> date:
    """About four weeks after the fiscal quarter closes."""
    total = (fiscal_year - 1) * 12 + company.fiscal_end_month + 3 * quarter - 1  # the quarter's last month
    year, month = divmod(total, 12)
    month += 1
    first_next = date(year + (month == 12), month % 12 + 1, 1)
    return first_next + timedelta(days=26)


def make_call(company: Company, quarter: int, fiscal_year: int, layout: str, seed: int = 0) -> Call:
    rng = random.Random(f"{company.ticker}{quarter}{fiscal_year}{seed}")
    analysts = rng.sample(company.analysts, 3)
    revenue = rng.randint(300, 900) + rng.randint(0, 9) / 10
    facts = {
        "revenue": f"${revenue:.1f} million",
        "gross_margin": f"{rng.randint(31, 58)}.{rng.randint(1, 9)}%",
        "opex": f"${rng.randint(60, 190)}.{rng.randint(1, 9)} million",
        "eps": f"${rng.randint(0, 2)}.{rng.randint(10, 99)}",
        "cash": f"${rng.randint(1, 4)}.{rng.randint(1, 9)} billion",
        "guide_low": f"${revenue + rng.randint(5, 20):.0f} million",
        "guide_high": f"${revenue + rng.randint(25, 45):.0f} million",
        "sites": str(rng.randint(3, 14)),
        "backlog": f"${rng.randint(1, 9)}.{rng.randint(1, 9)} billion",
        "buyback": f"${rng.randint(50, 400)} million",
        "churn": f"{rng.randint(2, 9)}.{rng.randint(1, 9)}%",
        "na_growth": f"{rng.randint(2, 19)}%", "eu_growth": f"{rng.randint(1, 15)}%",
        "apac_growth": f"{rng.randint(3, 25)}%", "headcount": f"{rng.randint(2, 9)},{rng.randint(100, 999)}",
        "service_share": f"{rng.randint(18, 35)}%", "tax": f"{rng.randint(17, 24)}.{rng.randint(1, 9)}%",
        "op_margin": f"{rng.randint(8, 22)}.{rng.randint(1, 9)}%",
        "capex": f"${rng.randint(20, 90)} million", "hires": str(rng.randint(120, 900)),
        "intl": f"{rng.randint(20, 45)}%", "units": f"{rng.randint(2, 40)},{rng.randint(100, 999)}",
        "inventory_days": str(rng.randint(45, 110)), "fcf": f"{rng.randint(70, 120)}%",
        "topics": ",".join(rng.sample(sorted(_TOPICS), 4)),
    }
    return Call(company, quarter, fiscal_year, layout, call_day(company, quarter, fiscal_year), analysts, facts)


def library(companies: tuple[Company, ...], quarters: list[tuple[int, int]], seed: int = 0) -> list[Call]:
    """One call per company and (quarter, fiscal year), layouts taken in turn."""
    calls = []
    for i, company in enumerate(companies):
        for j, (q, fy) in enumerate(quarters):
            calls.append(make_call(company, q, fy, LAYOUTS[(i + j) % len(LAYOUTS)], seed))
    return calls


_TALK = (
    "We continue to invest in our {product} roadmap while holding the line on discretionary spending.",
    "Customers told us again this quarter that reliability and service matter as much as price.",
    "Our teams in the field responded with faster installations and fewer support tickets.",
    "We remain disciplined about where we put our capital, and every investment has to earn its return.",
    "The feedback from our largest customers has been consistent: they want one partner for the whole lifecycle.",
    "We are also seeing more interest from mid-sized customers who had not considered us before.",
    "I want to thank our employees around the world for their hard work and their focus on customers.",
    "Our partners played a bigger role this quarter, and we expect that to continue as the channel matures.",
    "We simplified our product portfolio and retired several older configurations that few customers bought.",
    "Execution was good across the board, although there is always more to do on cost and on speed.",
    "We made progress on our sustainability goals, including the energy use of our own operations.",
    "The macro environment remains uncertain, and we are planning prudently while staying ready to invest.",
    "Our software and services attach rates improved, which makes our revenue more predictable over time.",
    "We also completed the integration of our order management systems, which took longer than we had hoped.",
    "Looking further out, we see a long runway for growth in our core markets and in adjacent ones.",
    "We are proud of the culture we have built, and we will protect it as we grow.",
)
# Further questions an analyst may ask: (question, who answers, the answer) with the call's own figures
_TOPICS = {
    "international": ("Could you size the international business for us and talk about where you are investing?", "ceo",
                      "International revenue was {intl} of the total this quarter. We are adding sales capacity in "
                      "Germany and Japan and expanding our partner network in Latin America."),
    "competition": ("Are you seeing any change in the competitive environment, particularly on price?", "ceo",
                    "The competitive environment is rational. We win on reliability and total cost of ownership, and "
                    "our win rate in competitive deals was stable compared with last quarter."),
    "hiring": ("How should we think about hiring for the rest of the year?", "cfo",
               "We expect to add about {hires} people over the rest of the year, mostly in engineering and field "
               "service, and the plan is already reflected in our outlook."),
    "capex": ("What is your capital expenditure plan for the full year?", "cfo",
              "Capital expenditures for the full year will be about {capex}, weighted to the second half as the new "
              "facilities come online."),
    "acquisitions": ("Any appetite for acquisitions at current valuations?", "ceo",
                     "We look at opportunities all the time, but our bar is high. Our priority remains organic growth "
                     "and returning capital to shareholders."),
    "inventory": ("Can you comment on inventory levels and working capital?", "cfo",
                  "Inventory days were {inventory_days} at the end of the quarter, and we expect them to come down "
                  "as supply normalizes."),
    "launch": ("How is the new product line ramping?", "ceo",
               "We shipped {units} units of the new product line in the quarter, ahead of our internal plan, and the "
               "early customer feedback has been very positive."),
    "cash": ("How should we think about free cash flow conversion this year?", "cfo",
             "We expect free cash flow conversion of about {fcf} of net income for the year, with the usual "
             "seasonality in the first half."),
}


def _turns(call: Call) -> list[tuple[str, str, str, list[str]]]:
    """(part, speaker, role, paragraphs) in order; part is "prepared" or "qa"."""
    c, f = call.company, call.facts
    q, fy = ORDINALS[call.quarter - 1], call.fiscal_year
    nxt = ORDINALS[call.quarter % 4]
    a = call.analysts
    rng = random.Random(f"{c.ticker}{call.quarter}{fy}talk")

    def more(n: int) -> str:  # sentences people say between the figures (no figures: those are the questions')
        return " ".join(rng.sample(_TALK, n)).format(product=c.product) + " "

    return [
        ("prepared", "Operator", "", [
            f"Good afternoon, and welcome to the {c.short} {q} quarter fiscal {fy} earnings conference call. At this "
            "time, all participants are in a listen-only mode. After the speakers' presentation, there will be a "
            "question-and-answer session. Please be advised that today's conference is being recorded. I would now "
            f"like to hand the conference over to your speaker today, {c.ir}, Vice President of Investor Relations."]),
        ("prepared", c.ir, "Vice President, Investor Relations", [
            f"Thank you, operator. Joining me today are {c.ceo}, our Chief Executive Officer, and {c.cfo}, our Chief "
            "Financial Officer. Before we begin, let me remind you that today's remarks include forward-looking "
            "statements that are subject to risks and uncertainties, and actual results may differ materially. "
            "We will also refer to non-GAAP measures; reconciliations are in our earnings release. With that, I "
            f"will turn the call over to {c.ceo.split()[0]}."]),
        ("prepared", c.ceo, "Chief Executive Officer", [
            f"Thanks, and good afternoon, everyone. Our {q} quarter was a solid one. Demand for our {c.product} "
            f"stayed healthy across regions, and our order backlog reached {f['backlog']} at quarter end, a record "
            "for the company. " + more(6),
            f"Turning to our markets. Revenue in North America grew {f['na_growth']} from a year ago, Europe grew "
            f"{f['eu_growth']}, and Asia Pacific grew {f['apac_growth']}, led by new customers in logistics and "
            "retail. We signed more multi-year agreements than in any prior quarter, and the pipeline for the rest of "
            "the year is larger than it was at this time last year. " + more(6),
            f"On our people: we ended the quarter with {f['headcount']} employees, and voluntary attrition remained "
            "below the industry average. We opened a new engineering office and promoted several leaders from within. "
            + more(6),
            "Let me spend a moment on our supply chain. Component availability improved through the quarter, lead "
            "times shortened, and we exited the period with inventory at a level we are comfortable with. " + more(6),
            f"Our capital return program continued: during the quarter we repurchased {f['buyback']} of our "
            "shares, and the board has authorized us to continue at a similar pace. " + more(6),
            f"With that, let me hand it over to {c.cfo.split()[0]} to walk through the numbers."]),
        ("prepared", c.cfo, "Chief Financial Officer", [
            f"Thank you, {c.ceo.split()[0]}. Total revenue for the {q} quarter was {f['revenue']}. Gross margin was "
            f"{f['gross_margin']}, reflecting our mix of {c.product} and service contracts and lower freight costs. "
            f"Operating expenses were {f['opex']}, in line with our plan. Diluted earnings per share were "
            f"{f['eps']}.",
            f"Service contracts made up {f['service_share']} of revenue, and recurring revenue continues to grow faster "
            f"than product revenue. Operating margin was {f['op_margin']} and our effective tax rate was {f['tax']}. "
            + more(6),
            f"We ended the quarter with cash and investments of {f['cash']} and no borrowings under our revolving "
            "credit facility. Free cash flow was positive for the quarter, helped by working capital. " + more(6),
            f"Turning to our outlook and guidance. For the {nxt} quarter, we expect revenue between {f['guide_low']} and "
            f"{f['guide_high']}, and we expect gross margin to be roughly in line with this quarter. " + more(6),
            "With that, operator, please open the line for questions."]),
        ("qa", "Operator", "", [
            "Thank you. We will now begin the question-and-answer session. Our first question comes from "
            f"{a[0][0]} with {a[0][1]}. Your line is open."]),
        ("qa", a[0][0], f"Analyst, {a[0][1]}", [
            "Hi, thanks for taking my question. Can you talk about capacity? How many new sites are you planning "
            "to open over the next twelve months, and how should we think about the capital needed?"]),
        ("qa", c.ceo, "Chief Executive Officer", [
            f"Sure. We plan to open {f['sites']} new distribution centers over the next twelve months, mostly in "
            "regions where our installed base has outgrown our service footprint. The capital is already in our "
            "plan, and each site pays back in under three years. " + more(6)]),
        ("qa", a[0][0], f"Analyst, {a[0][1]}", ["Thank you."]),
        ("qa", "Operator", "", [f"Our next question comes from {a[1][0]} with {a[1][1]}."]),
        ("qa", a[1][0], f"Analyst, {a[1][1]}", [
            "Good afternoon. I wanted to ask about customer retention. What was customer churn in the quarter, and "
            "are you seeing any change in renewal behavior?"]),
        ("qa", c.cfo, "Chief Financial Officer", [
            f"Thanks for the question. Annualized customer churn was {f['churn']} in the quarter. Renewal rates held "
            "up well, and we did not see customers delaying decisions in a meaningful way. " + more(6)]),
        *[turn for k, topic in enumerate(f["topics"].split(","))
          for turn in _exchange(call, c.analysts[(k + 1) % len(c.analysts)] if c.analysts else a[1], topic, more(5))],
        ("qa", "Operator", "", [f"Our last question comes from {a[2][0]} with {a[2][1]}."]),
        ("qa", a[2][0], f"Analyst, {a[2][1]}", [
            "Thanks. Just a follow-up on pricing: are you still able to pass through cost increases to customers?"]),
        ("qa", c.ceo, "Chief Executive Officer", [
            "We took a modest price increase at the start of the quarter and it stuck. We are not planning further "
            "increases this year. " + more(6)]),
        ("qa", "Operator", "", [
            f"There are no further questions at this time. I will turn the call back to {c.ceo} for closing "
            "remarks."]),
        ("qa", c.ceo, "Chief Executive Officer", [
            "Thank you all for joining us today. We look forward to updating you on our progress next quarter."]),
        ("qa", "Operator", "", [
            "This concludes today's conference call. Thank you for participating. You may now disconnect."]),
    ]


def _exchange(call: Call, analyst: tuple[str, str], topic: str, talk: str) -> list[tuple[str, str, str, list[str]]]:
    asked, who, answer = _TOPICS[topic]
    c = call.company
    name, bank = analyst
    speaker, role = (c.ceo, "Chief Executive Officer") if who == "ceo" else (c.cfo, "Chief Financial Officer")
    return [("qa", "Operator", "", [f"Our next question comes from {name} with {bank}. Please go ahead."]),
            ("qa", name, f"Analyst, {bank}", [f"Thanks for taking the question. {asked}"]),
            ("qa", speaker, role, [answer.format(**call.facts) + " " + talk])]


def _ascii(text: str) -> str:
    return text.encode("latin-1", "replace").decode("latin-1")


def write(call: Call, path: Path) -> Path:
    """The call's transcript as a PDF at `path`."""
    from fpdf import FPDF

    c = call.company
    q, fy, layout = ORDINALS[call.quarter - 1], call.fiscal_year, call.layout
    when = f"{call.day:%B} {call.day.day}, {call.day.year}"
    pdf = FPDF()
    pdf.set_auto_page_break(True, margin=18)
    pdf.add_page()

    def line(text: str, size: float = 11, bold: bool = False, gap: float = 6.5) -> None:
        pdf.set_font("Helvetica", "B" if bold else "", size)
        pdf.multi_cell(0, gap, _ascii(text), new_x="LMARGIN", new_y="NEXT")

    def para(text: str) -> None:
        line(text)
        pdf.ln(2)

    staff_rows = [(c.ir, "Vice President, Investor Relations"), (c.ceo, "Chief Executive Officer"),
                  (c.cfo, "Chief Financial Officer")]
    def participants(staff_header: str, analysts_header: str, sep: str, upper: bool) -> None:
        for header, rows in ((staff_header, staff_rows), (analysts_header, call.analysts)):
            line(header, 11, True)
            for name, role in rows:
                line(f"{name.upper() if upper else name}{sep}{role}")

    if layout == "own_line":
        line(f"{c.name} ({c.ticker}) Q{call.quarter} {fy} Earnings Call Transcript", 15, True, 8)
        line(f"{when} 5:00 PM ET")
        pdf.ln(3)
        participants("Company Participants", "Conference Call Participants", " - ", False)
    elif layout == "dash":
        line(f"{c.short} ({c.ticker}) Q{call.quarter} {fy} Earnings Call", 15, True, 8)
        line(f"{when}, 4:30 p.m. ET")
        line("Contents: Prepared Remarks; Questions and Answers; Call Participants")
    elif layout == "caps":
        line(f"{q.upper()} QUARTER FISCAL {fy} EARNINGS CONFERENCE CALL", 14, True, 8)
        line(c.name.upper(), 12, True)
        line(when)
        pdf.ln(3)
        participants("CORPORATE PARTICIPANTS", "CONFERENCE CALL PARTICIPANTS", ", ", True)
    else:  # comma
        line(f"{q.capitalize()} Quarter Fiscal {fy} Earnings Conference Call", 14, True, 8)
        line(f"Date: {when}")
    pdf.ln(4)

    part = None
    for turn_part, speaker, role, paragraphs in _turns(call):
        if turn_part != part:
            part = turn_part
            heading = {("own_line", "prepared"): "Presentation", ("own_line", "qa"): "Question-and-Answer Session",
                       ("dash", "prepared"): "Prepared Remarks:", ("dash", "qa"): "Questions and Answers:",
                       ("caps", "prepared"): "PRESENTATION", ("caps", "qa"): "QUESTIONS AND ANSWERS",
                       ("comma", "prepared"): "Prepared Remarks", ("comma", "qa"): "Questions and Answers"}
            line(heading[(layout, part)], 12, True, 8)
        if layout == "own_line":
            line(speaker, 10, True)
            for p in paragraphs:
                para(p)
        elif layout == "dash":
            analyst = role.startswith("Analyst, ")
            label = speaker if not role else (f"{speaker} -- {role[9:]} -- Analyst" if analyst
                                              else f"{speaker} -- {role}")
            line(label, 10, True)
            for p in paragraphs:
                para(p)
        else:
            label = speaker.upper() if layout == "caps" else (f"{speaker}, {role}" if role else speaker)
            para(f"{label}: {paragraphs[0]}")
            for p in paragraphs[1:]:
                para(p)
        pdf.ln(1)
    if layout == "dash":
        line("Call participants:", 11, True)
        for name, role in staff_rows:
            line(f"{name} -- {role}")
        for name, bank in call.analysts:
            line(f"{name} -- {bank} -- Analyst")
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def questions(call: Call) -> list[dict[str, str]]:
    """Questions on the call, each with the figure its answer must hold and the speaker who says it."""
    c, f = call.company, call.facts
    q = f"Q{call.quarter} {call.fiscal_year}"
    return [
        {"question": f"What gross margin did {c.short}'s CFO report on the {q} earnings call?",
         "answer": f["gross_margin"], "speaker": c.cfo},
        {"question": f"What revenue guidance for the next quarter did {c.short} give on its {q} conference call?",
         "answer": f["guide_low"], "speaker": c.cfo},
        {"question": f"On the {q} call, how many new distribution centers did {c.short} say it plans to open?",
         "answer": f["sites"] + " new distribution centers", "speaker": c.ceo},
    ]


def paraphrases(call: Call) -> list[dict[str, str]]:
    """Questions in other words than the call's (no "gross margin ... reported" echo), for the benchmark."""
    c, f = call.company, call.facts
    q = f"Q{call.quarter} {call.fiscal_year}"
    return [
        {"question": f"How much did {c.short} expect to bring in during the following quarter, per its {q} call?",
         "answer": f"revenue between {f['guide_low']}", "speaker": c.cfo},
        {"question": f"What was {c.short}'s customer attrition rate in {q}?",
         "answer": f"churn was {f['churn']}", "speaker": c.cfo},
        {"question": f"How many people worked at {c.short} at the end of {q}?",
         "answer": f"{f['headcount']} employees", "speaker": c.ceo},
        {"question": f"What share of {c.short}'s sales came from service contracts in {q}?",
         "answer": f"{f['service_share']} of revenue", "speaker": c.cfo},
    ]


def latest_questions(calls: list[Call]) -> list[tuple[Call, dict[str, str]]]:
    """Per company, a question on its most recent call (the newest call date), naming no quarter."""
    newest: dict[str, Call] = {}
    for call in calls:
        if call.company.short not in newest or call.day > newest[call.company.short].day:
            newest[call.company.short] = call
    return [(call, {"question": f"What gross margin did {call.company.short} report on its most recent earnings call?",
                    "answer": call.facts["gross_margin"], "speaker": call.company.cfo}) for call in newest.values()]
