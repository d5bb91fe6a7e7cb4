"""Writes the sample document shipped in the package (`jsonl_engine/sample/tern-point-lighthouse.pdf`, what
`jsonl-engine ingest --sample` adds): a short made-up report, text of our own (no rights of others), two pages
with headings, numbers to ask about. Run `python -m tests.support.make_sample` to regenerate it (needs fpdf2)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

OUT = Path(__file__).resolve().parents[2] / "jsonl_engine" / "sample" / "tern-point-lighthouse.pdf"

PAGES = [
    ("The Tern Point Lighthouse: Keeper's Report 2031", [
        ("The Tower", "The Tern Point lighthouse stands on a granite headland at the mouth of Gullwater Bay. "
                      "The tower is 31 metres tall and was built of local stone in 1884. Visitors climb 142 "
                      "steps to reach the lantern gallery."),
        ("The Light", "The lantern shows two white flashes every 15 seconds. The light can be seen from 22 "
                      "nautical miles away in clear weather. Since 2019 the lamp has been an LED array that draws "
                      "400 watts."),
    ]),
    (None, [
        ("Visitors", "In 2031 the lighthouse welcomed 18,400 visitors, up from 15,900 in 2030. The busiest "
                     "month was August, with 3,100 visitors. School groups made up one visitor in ten."),
        ("Maintenance", "Repainting the tower cost 48,000 euros in 2031. The keepers replaced 12 of the 24 "
                        "lantern panes after the storm of 9 February 2031. The foghorn was retired in 2005 and "
                        "is kept in the museum room."),
    ]),
]


def main() -> None:
    pdf = FPDF()  # A4: the title fits on one line
    pdf.set_title("The Tern Point Lighthouse: Keeper's Report 2031")
    pdf.set_author("jsonl-engine sample")
    pdf.set_creation_date(datetime(2031, 12, 31, tzinfo=UTC))  # reproducible bytes
    for title, sections in PAGES:
        pdf.add_page()
        if title:
            pdf.set_font("Helvetica", "B", 16)
            pdf.multi_cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, "Published by the Gullwater Bay Lighthouse Trust, 31 December 2031.",
                           new_x="LMARGIN", new_y="NEXT")  # a plain line: the title is not read with the heading
            pdf.ln(4)
        for heading, body in sections:
            pdf.set_font("Helvetica", "B", 13)
            pdf.multi_cell(0, 7, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(OUT))
    print(OUT, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
