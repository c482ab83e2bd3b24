"""``brt check``'s reading of reports as agents and brt write them (issue 42), without a store or a model: every
citation style, Sources and References lists, what is and is not a claim, claims cited per clause, brt's own
line types, dates in their written forms, and the quote rules (elisions, short quotes, first-letter case).
The checks against a real harvest are in tests/e2e/test_check.py."""

from __future__ import annotations

import pytest

from orchestrator.audit.claims import iso_date, parse_report
from orchestrator.audit.quotes import match_quote


def claims(text: str) -> list:
    return parse_report(text).claims


def cited(claim) -> list[tuple[str | None, str | None]]:
    return [(c.url, c.date) for c in claim.citations]


@pytest.mark.parametrize(
    "text",
    [
        # numbered references with a References list, a line each
        "The ferry leaves every two hours [1].\n\n## References\n\n"
        "[1] https://h.test/ferry (last updated: 2024-05-01)\n",
        # a numbered list under a Sources heading
        "The ferry leaves every two hours [1].\n\n## Sources\n\n1. https://h.test/ferry (last updated: 1 May 2024)\n",
        # a reference-style link and its definition
        "The ferry leaves every two hours, says [the timetable][t] (last updated: 2024-05-01).\n\n"
        "[t]: https://h.test/ferry\n",
        # a footnote
        "The ferry leaves every two hours.[^f]\n\n"
        "[^f]: [Timetable](https://h.test/ferry) (last updated: May 1, 2024)\n",
        # an inline link, and an autolink
        "The ferry leaves every two hours ([Timetable](https://h.test/ferry), last updated: 2024-05-01).",
        "The ferry leaves every two hours <https://h.test/ferry> (updated on 2024/05/01).",
    ],
)
def test_each_citation_style_is_read(text: str) -> None:
    first = claims(text)[0]
    assert first.text.startswith("The ferry leaves every two hours")
    assert cited(first) == [("https://h.test/ferry", "2024-05-01")], cited(first)


def test_a_table_with_a_sources_list() -> None:
    text = ("| Finding | Source |\n|---|---|\n| The ferry leaves every two hours | [1] |\n"
            "| A return ticket costs 12 euros | [2] |\n\n## Sources\n\n1. https://h.test/ferry\n"
            "2. https://h.test/prices (last updated: 2023-11-20)\n")
    found = claims(text)
    rows = [c for c in found if c.kind == "row"]
    assert [cited(c) for c in rows] == [[("https://h.test/ferry", None)],
                                        [("https://h.test/prices", "2023-11-20")]]
    assert all(c.kind != "row" or c.line in (3, 4) for c in found)


def test_every_listed_url_is_a_listing_checked_even_when_nothing_cites_it() -> None:
    text = ("The ferry leaves every two hours [1].\n\n## Sources\n\n- https://h.test/ferry\n"
            "- [Invented](https://h.test/made-up-page) (last updated: 2024-01-01)\n\n"
            "[1]: https://h.test/ferry\n[spare]: https://elsewhere.example/x\n\n[^9]: https://h.test/never-cited\n")
    listed = {c.citations[0].url: c for c in claims(text) if c.kind == "source"}
    assert {"https://h.test/made-up-page", "https://elsewhere.example/x", "https://h.test/never-cited"} <= set(listed)
    assert listed["https://h.test/made-up-page"].citations[0].date == "2024-01-01"
    assert listed["https://h.test/made-up-page"].line == 6


@pytest.mark.parametrize(
    "text",
    ["Below is a summary of what the pages say.", "Here are the main findings.", "The sections follow.",
     "What did the harbour office decide?", "The sources cover three topics:",
     "Below is a summary of what the harbour pages say.", "Here are the key ferry findings."],
)
def test_framing_sentences_and_questions_are_no_claims(text: str) -> None:
    assert claims(text) == []


@pytest.mark.parametrize(
    "text",
    ["The evidence shows growth.", "The pages say ferry prices rose.", "Harbour fees are listed below.",
     "Here the ferry leaves early."],
)
def test_a_sentence_with_words_about_the_report_can_still_be_a_claim(text: str) -> None:
    assert len(claims(text)) == 1, text


def test_a_framing_word_list_does_not_hide_a_claim() -> None:
    found = claims("Below is a summary: the ferry leaves every two hours. Here prices rose by 5 percent.")
    assert [c.text for c in found] == ["the ferry leaves every two hours.", "Here prices rose by 5 percent."] or \
        len(found) == 2, [c.text for c in found]


def test_a_sentence_citing_two_pages_is_checked_per_clause() -> None:
    first, second = claims("The ferry leaves every two hours [a](https://h.test/ferry), and a return ticket "
                           "costs 12 euros [b](https://h.test/prices).")
    assert first.kind == second.kind == "clause"
    assert cited(first) == [("https://h.test/ferry", None)] and "two hours" in first.plain
    assert cited(second) == [("https://h.test/prices", None)] and "12 euros" in second.plain
    assert "two hours" not in second.plain


def test_one_source_cited_twice_stays_one_claim() -> None:
    (only,) = claims("The ferry leaves every two hours [a](https://h.test/ferry) and takes 45 minutes "
                     "[a](https://h.test/ferry).")
    assert only.kind == "sentence"


@pytest.mark.parametrize(
    ("written", "iso"),
    [("18 March 2025", "2025-03-18"), ("March 18, 2025", "2025-03-18"), ("18th of March 2025", "2025-03-18"),
     ("Mar. 18, 2025", "2025-03-18"), ("2025/3/18", "2025-03-18"), ("2025-03-18T10:00:00Z", "2025-03-18"),
     ("Unknown", "unknown"), ("31 February 2025", "31 February 2025")],
)
def test_dates_in_their_written_forms(written: str, iso: str) -> None:
    assert iso_date(written) == iso


def test_brt_own_line_types() -> None:
    text = "\n".join([
        "# Harbour", "", "Goal: What does the harbour site say?", "",
        "Charter `harbour` · generated 2026-11-27T10:00:00Z · evidence threshold 0.30 (model)", "",
        '[Ferry Evidence #1] "Boats leave every two hours." — h.test/ferry (last updated: 2024-05-01); '
        "also at h.test/mirror (last updated: unknown)",
        "[Ferry Agreement] 2 sources agree on 2 hours (#1)", "",
        "[Ferry Conflict] 45 minutes vs 55 minutes (about: crossing)",
        '  - [Ferry Evidence #1] "Boats leave every two hours." — h.test/ferry (last updated: 2024-05-01)', "",
        '[Lamp Gap] No evidence met the threshold for "When?" (searched 3 chunks from 2 pages).', "",
        "## Acceptance criteria", "", "- **covered**: The crossing time is cited — Ferry: #1 (h.test/ferry)",
        "- **not covered**: A gap is reported — no section is reported as a Gap", "",
    ])
    parsed = parse_report(text)
    kinds = [(c.line, c.kind) for c in parsed.claims]
    assert kinds == [(5, "header"), (7, "evidence line"), (8, "agreement"), (10, "conflict"),
                     (11, "evidence line"), (17, "acceptance"), (18, "acceptance")], kinds
    assert parsed.gaps == 1
    evidence = parsed.claims[1]
    assert [(c.kind, c.url, c.date) for c in evidence.citations] == [
        ("evidence", "h.test/ferry", "2024-05-01"), ("also at", "h.test/mirror", "unknown")]
    assert parsed.claims[0].info["id"] == "harbour"
    assert parsed.claims[5].info == {"verdict": "covered", "criterion": "The crossing time is cited",
                                     "reason": "Ferry: #1 (h.test/ferry)"}


PAGE = ("The old bridge is not safe for heavy lorries. It is completely unsafe in storms. Tickets cost 12 to 15 "
        "euros for adults. Largest Contentful Paint should stay under 2.5 seconds. The \"no-cors\" mode is the "
        "default.")


@pytest.mark.parametrize(
    ("quote", "found"),
    [
        ("completely safe", False),  # a short quote is checked like a long one; "safe" is not "unsafe"
        ("completely unsafe", True),
        ("safe for heavy", True),
        ("largest Contentful Paint", True),  # the first letter's case
        ("Largest Contentful Paint should stay under 2.5 seconds", True),
        ("Largest contentful paint should stay under 2.5 seconds", False),  # other letters' case: a change
        ("Tickets cost 12 – 15 euros", False),  # a dash that is not on the page
        ("The old bridge is … safe for heavy lorries", False),  # the elision drops "not"
        ("The old bridge is not safe … lorries", True),
        ("Tickets cost 12 … euros", False),  # the elision drops a number
        ("The old bridge is not … in storms", False),  # the elision joins two sentences
        ("It is completely... in storms", True),  # three full stops elide too
        ("It is … safe in storms", False),  # the elision leaves out "unsafe"'s negative half
        ("The 'no-cors' mode is the default", True),  # a quotation in a quote takes the other marks
        ("The ‘no-cors’ mode is the default", True),
        ("The 'no-cors mode' is the default", False),  # the marks stand elsewhere: a change
    ],
)
def test_quote_rules(quote: str, found: bool) -> None:
    assert match_quote(quote, PAGE).found is found, match_quote(quote, PAGE)


def test_why_an_elided_quote_fails() -> None:
    assert "not" in (match_quote("The old bridge is … safe for heavy lorries", PAGE).why or "")
    assert "number" in (match_quote("Tickets cost 12 … euros", PAGE).why or "")
    assert "different sentences" in (match_quote("The old bridge is not … in storms", PAGE).why or "")


def test_a_listed_url_of_another_scheme_is_a_citation_that_cannot_resolve() -> None:
    text = ("The ferry leaves every two hours [1].\n\n## References\n\n[1] https://h.test/ferry\n"
            "[2] javascript://h.test/ferry\n")
    listed = [c for c in claims(text) if c.kind == "source"]
    assert [c.citations[0].url for c in listed] == ["https://h.test/ferry", "javascript://h.test/ferry"]
    assert [c.line for c in listed] == [5, 6]


def test_a_word_from_another_sentence_does_not_make_a_reversal_stated() -> None:
    """'… is poor' is not stated by a passage whose one sentence says '… is good' and another '… is poor'."""
    from orchestrator.audit.support import features

    passage = ("A Largest Contentful Paint of 2.5 seconds or less is good. Between 2.5 and 4 seconds it needs "
               "improvement, and above 4 seconds it is poor.")
    assert features("A Largest Contentful Paint of 2.5 seconds or less is poor.", passage, 1.0, None)["novel"] > 0
    assert features("A Largest Contentful Paint of 2.5 seconds or less is good.", passage, 1.0, None)["novel"] == 0


def test_the_html_reports_remarks_on_itself_are_no_claims() -> None:
    from orchestrator.audit.report_text import html_markdown

    html = ('<!doctype html><html><body><main><h1>Harbour</h1><section id="acceptance"><h2>Acceptance criteria</h2>'
            '<p class="note">The charter states no acceptance criteria.</p></section>'
            "<section><h2>Ferry</h2><p>The ferry leaves every two hours, says "
            '<a href="https://h.test/ferry">the timetable</a>.</p></section></main></body></html>')
    found = claims(html_markdown(html))
    assert len(found) == 1 and found[0].plain.startswith("The ferry leaves every two hours"), found
    assert [c.url for c in found[0].citations] == ["https://h.test/ferry"]


_PAGE = "In 1893 the colony granted all women the vote.[51][52] The law passed the upper house.[2]"


@pytest.mark.parametrize(
    ("text", "quote"),
    [
        # a restated sentence with the page's own footnote marks, and a link
        ("In 1893 the colony granted all women the vote.[51] ([History](https://h.test/history), 2024-05-01).",
         None),
        # marks inside a quote, cited by a numbered reference the report lists
        ('The page says "the colony granted all women the vote.[51][52]" [1].\n\n## References\n\n'
         "[1] https://h.test/history (last updated: 2024-05-01)\n", "the colony granted all women the vote.[51][52]"),
        # marks inside a quote that are also numbers of other references the report lists
        ('The page says "the colony granted all women the vote.[51][52] The law passed the upper house.[2]" [1].'
         "\n\n## References\n\n[1] https://h.test/history (last updated: 2024-05-01)\n[2] https://h.test/other\n",
         "the colony granted all women the vote.[51][52] The law passed the upper house.[2]"),
    ],
)
def test_the_pages_own_footnote_marks_are_not_citations(text: str, quote: str | None) -> None:
    found = [c for c in claims(text) if c.kind != "source"]
    assert len(found) == 1 and [c.url for c in found[0].citations] == ["https://h.test/history"], found
    assert found[0].quotes == ([quote] if quote else [])  # the marks stay quoted
    assert all(match_quote(q, _PAGE).found for q in found[0].quotes)


def test_a_numbered_reference_the_report_never_lists_still_fails_to_resolve() -> None:
    found = claims("The colony granted all women the vote in 1893 [7].\n\n## References\n\n"
                   "[1] https://h.test/history\n")
    assert [(c.kind, c.n) for c in found[0].citations] == [("ref", 7)]


def test_a_synthesis_json_read_alone_keeps_each_sources_stated_origin() -> None:
    import json

    from orchestrator.audit.report_text import json_markdown

    blocks = [{"n": 1, "quote": "Boats leave every two hours.", "url": "https://h.test/a", "origin": "harvest"},
              {"n": 2, "quote": "Bikes travel free.", "url": "https://h.test/b", "origin": "add_page"}]
    doc = {"charter_id": "x", "title": "T", "sections": [
        {"label": "A", "title": "A", "question": "q?", "gaps": [],
         "blocks": [dict(b, last_updated="2024-05-01") for b in blocks]}]}
    lines = [x for x in json_markdown(json.dumps(doc)).splitlines() if "Evidence #" in x]
    assert ["added without a harvest" in x for x in lines] == [False, True]
