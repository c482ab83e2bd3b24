"""The pure parts of ``brt check``: reading claims, quotes and citations out of Markdown (``audit/claims.py``),
comparing quotes and URLs (``audit/check.py``, ``audit/evidence_source.py``) and the explicit signals of the
support score (``audit/support.py``). The checks against a real harvest are in tests/e2e/test_check.py."""

from __future__ import annotations

import pytest

from orchestrator.audit.check import quote_in_text
from orchestrator.audit.claims import parse_report
from orchestrator.audit.evidence_source import url_key
from orchestrator.audit.support import numbers, passages, signals


def claims_of(text: str) -> list:
    return parse_report(text).claims


def only(text: str):
    found = claims_of(text)
    assert len(found) == 1, [c.text for c in found]
    return found[0]


def test_an_evidence_line_as_brt_prints_it() -> None:
    line = ('[CLS Evidence #2] "Reserve space with \\"width\\" and height [attributes]." — web.dev/articles/cls '
            "(last updated: 2025-09-14); also at example.org/cls (last updated: unknown)")
    parsed = parse_report(f"# Report\n\n{line}\n[CLS Gap] No evidence met the threshold for \"x\" (searched 1).\n")
    assert parsed.gaps == 1
    claim = only(line)
    assert claim.kind == "evidence line" and claim.line == 1
    assert claim.quotes == ['Reserve space with "width" and height [attributes].']
    main, also = claim.citations
    assert (main.label, main.n, main.url, main.date) == ("CLS", 2, "web.dev/articles/cls", "2025-09-14")
    assert (also.kind, also.url, also.date) == ("also at", "example.org/cls", "unknown")
    assert parsed.evidence_lines[("CLS", 2)].url == "web.dev/articles/cls"


def test_evidence_lines_whose_quotes_hold_line_breaks() -> None:
    first = ('[Ferry Evidence #1] "Boats leave the south quay.\nThe crossing takes 45 minutes." — x.test/ferry '
             "(last updated: 2024-05-01); also at y.test/ferry (last updated: unknown)")
    second = '[Ferry Evidence #2] "Bicycles travel free." — x.test/bikes (last updated: 2024-05-01)'
    found = claims_of(f"# Ferry\n\n{first}\n{second}\n")
    assert [c.kind for c in found] == ["evidence line", "evidence line"], [c.text for c in found]
    assert found[0].quotes == ["Boats leave the south quay. The crossing takes 45 minutes."]
    assert [c.url for c in found[0].citations] == ["x.test/ferry", "y.test/ferry"]
    assert (found[0].line, found[1].line) == (3, 5)


def test_an_evidence_line_whose_quote_quotes_with_typographic_marks() -> None:
    line = ('[Ferry Evidence #1] "The harbour master said “no” to night crossings." — x.test/ferry '
            "(last updated: 2024-05-01); also at y.test/ferry (last updated: unknown)")
    claim = only(line)
    assert claim.kind == "evidence line" and claim.quotes == ["The harbour master said “no” to night crossings."]
    assert [c.url for c in claim.citations] == ["x.test/ferry", "y.test/ferry"]


@pytest.mark.parametrize(
    ("text", "url", "date"),
    [
        ("The lamp was electrified in 1953 ([Lighthouse](https://x.test/a.html), last updated: 2024-05-01).",
         "https://x.test/a.html", "2024-05-01"),
        ("The lamp was electrified in 1953 <https://x.test/a.html> (updated 2024-05-01).", "https://x.test/a.html",
         "2024-05-01"),
        ("The lamp was electrified in 1953, see https://x.test/a.html.", "https://x.test/a.html", None),
        ("The lamp was electrified in 1953 — x.test/a.html (last updated: unknown).", "x.test/a.html", "unknown"),
        ("The lamp was electrified in 1953 [lamp][1].\n\n[1]: https://x.test/a.html", "https://x.test/a.html", None),
        ("The lamp was electrified in 1953 [^a].\n\n[^a]: [Lighthouse](https://x.test/a.html) (2024-05-01)",
         "https://x.test/a.html", "2024-05-01"),
    ],
)
def test_citation_styles(text: str, url: str, date: str | None) -> None:
    claim = claims_of(text)[0]
    assert claim.line == 1 and not claim.quotes
    assert [(c.url, c.date) for c in claim.citations] == [(url, date)]
    assert claim.plain.startswith("The lamp was electrified in 1953")
    assert "x.test" not in claim.plain


def test_sentences_of_a_paragraph_each_get_their_own_citations() -> None:
    text = (
        'The guide says "The crossing takes 45 minutes and costs €12." [^1] Dogs must stay on a lead\n'
        "on the car deck [Ferry Evidence #3]. Bicycles travel free.\n\n"
        "[^1]: https://x.test/ferry.html (last updated: unknown)\n"
    )
    first, second, third = claims_of(text)
    assert first.quotes == ["The crossing takes 45 minutes and costs €12."]
    assert [c.url for c in first.citations] == ["https://x.test/ferry.html"]  # the footnote after the quote
    assert second.line == 1 and [(c.label, c.n) for c in second.citations] == [("Ferry", 3)]
    assert third.line == 2 and not third.citations  # uncited


def test_a_quote_of_several_sentences_and_curly_quotes_stay_one_claim() -> None:
    claim = only("It reads “The pier fell. The sheds burned. Nobody was hurt.” (https://x.test/a, 2020-01-02)")
    assert claim.quotes == ["The pier fell. The sheds burned. Nobody was hurt."]
    assert claim.citations[0].date == "2020-01-02"


def test_short_quotes_are_quotes_too() -> None:
    claim = only('The site calls the lamp "electric" in its notes (https://x.test/a).')
    assert claim.quotes == ["electric"]


def test_a_citation_line_after_a_blockquote_belongs_to_it() -> None:
    claim = only('> "Boats leave the south quay every two hours."\n> — [Ferry](https://x.test/f) (last updated: '
                 "2023-02-03)\n")
    assert claim.quotes == ["Boats leave the south quay every two hours."]
    assert [(c.url, c.date) for c in claim.citations] == [("https://x.test/f", "2023-02-03")]


@pytest.mark.parametrize(
    "text",
    [
        "- Dogs are welcome everywhere (unsupported).",
        "- Dogs are welcome everywhere. [no evidence]",
        "- Unsupported: dogs are welcome everywhere.",
        "Dogs are welcome everywhere. [Dogs Gap]",
        "Dogs are welcome everywhere on every ferry. (unsupported)",
    ],
)
def test_marked_unsupported(text: str) -> None:
    assert only(text).marked_unsupported


def test_a_mark_after_a_sentence_belongs_to_it_when_the_paragraph_goes_on() -> None:
    text = (
        "Dogs are welcome on every ferry of the line. (unsupported)\n"
        "Cats travel in a basket on the car deck. (unsupported) Boats leave the south quay every hour.\n"
    )
    claims = parse_report(text).claims
    assert [(c.line, c.marked_unsupported) for c in claims] == [(1, True), (2, True), (2, False)]
    assert claims[1].plain.startswith("Cats travel") and claims[2].plain.startswith("Boats leave")


@pytest.mark.parametrize(
    "text",
    [
        "# The lighthouse was converted in 1953",
        "What does the site say about the lighthouse?",
        "The findings are these:",
        "```\nThe lighthouse was converted in 1953.\n```",
        "Ok.",
        "| Year | Event |\n|---|---|",
        "---",
    ],
)
def test_not_claims(text: str) -> None:
    assert claims_of(text) == []


def test_bullets_and_table_rows_are_claims_with_their_lines() -> None:
    text = "Intro line that states nothing:\n\n- First bullet states a fact.\n- Second bullet states another.\n\n" \
           "| Year | Event |\n|---|---|\n| 1953 | The lamp was converted to electricity |\n"
    lines = [(c.line, c.kind) for c in claims_of(text)]
    assert lines == [(3, "bullet"), (4, "bullet"), (8, "row")]


def test_a_stray_quote_mark_does_not_swallow_the_next_citation() -> None:
    text = ('Its 5" lamp shines far ([a](https://x.test/a)). The harbour was rebuilt in 1920 '
            '([b](https://x.test/b)).')
    first, second = claims_of(text)
    assert [c.url for c in first.citations] == ["https://x.test/a"]
    assert [c.url for c in second.citations] == ["https://x.test/b"]


def test_a_footnote_that_quotes_is_checked_on_its_own_line() -> None:
    text = 'The harbour was rebuilt [^1].\n\n[^1]: "rebuilt in 1920 after a great storm" — https://x.test/i\n'
    claim, note = claims_of(text)
    assert note.kind == "footnote" and note.line == 3 and note.quotes == ["rebuilt in 1920 after a great storm"]
    assert [c.url for c in claim.citations] == ["https://x.test/i"]


def test_a_reference_to_a_missing_footnote_is_kept() -> None:
    claim = only("The harbour was rebuilt after the storm [^9].")
    assert [c.kind for c in claim.citations] == ["footnote"]


@pytest.mark.parametrize(
    ("quote", "ok"),
    [
        ("converted to electricity in 1953", True),
        ("converted  to\nelectricity in 1953", True),  # whitespace collapsed
        ("… converted to electricity …", True),  # elisions at either end
        ("lamp was converted … in 1953", True),  # an elision inside, parts in order, within one sentence
        ("lamp was converted ... in 1953", True),  # three full stops elide too
        ("Its lamp … converted to electricity", True),
        ("it can be seen … miles away", False),  # "twenty" left out at the cut
        ("lamp was converted … twenty nautical miles", False),  # the words left out hold a number (1953)
        ("in 1953 … lamp was converted", False),  # not in order
        ("converted to electricity … bright", False),  # an elision never joins two sentences
        ("converted to electricity in 1935", False),
        ("It’s “bright”", True),  # typographic marks fold to ASCII on both sides
        ("…", False),
    ],
)
def test_quote_in_text(quote: str, ok: bool) -> None:
    page = ("Its lamp was converted to electricity in 1953 and it can be seen from twenty nautical miles away. "
            "It's \"bright\".")
    assert quote_in_text(quote, page) is ok


def test_url_key_ignores_scheme_slash_fragment_and_encoding() -> None:
    same = ["https://Web.dev/articles/cls/", "web.dev/articles/cls", "http://web.dev/articles/cls#intro",
            "https://web.dev/articles/%63ls", "HTTP://WEB.DEV:80/articles/x/../cls"]
    assert len({url_key(u) for u in same}) == 1
    assert url_key("web.dev/articles/cls?a=1") != url_key("web.dev/articles/cls")
    assert url_key("127.0.0.1:8000/a.html") != url_key("127.0.0.1:8001/a.html")


@pytest.mark.parametrize(
    "url",
    ["javascript://web.dev/articles/cls", "javascript:alert(1)", "file:///web.dev/articles/cls",
     "file://web.dev/articles/cls", "ftp://web.dev/articles/cls", "ws://web.dev/articles/cls",
     "wss://web.dev/articles/cls", "data:text/html,web.dev/articles/cls", "https://user:pw@web.dev/articles/cls",
     "http://[::1/x", "blob:https://web.dev/articles/cls"],
)
def test_what_is_no_http_url_has_no_key(url: str) -> None:
    """Only http(s) URLs without userinfo, as a browser parses them (the allowlist's parser), name a page."""
    assert url_key(url) is None


def test_a_backslash_ends_the_authority_as_a_browser_reads_it() -> None:
    """``http://other.example\\@web.dev/articles/cls`` opens other.example in a browser; Python's urlsplit read
    web.dev. It must not name the stored page web.dev/articles/cls."""
    for url in ("http://other.example\\@web.dev/articles/cls", "other.example\\@web.dev/articles/cls",
                "https://other.example\\web.dev/articles/cls"):
        assert url_key(url) is not None and url_key(url).startswith("other.example/"), url_key(url)


def test_numbers() -> None:
    assert numbers("It costs 1,500 euros, 4.50 a day, twenty-five times, two hundred people") == {
        "1500", "4.5", "25", "200"}
    assert numbers("one of the boats") == frozenset()


@pytest.mark.parametrize(
    ("claim", "kind"),
    [
        ("The lamp was converted to electricity in 1935.", "numbers"),
        ("The lamp was not converted to electricity in 1953.", "negation"),
    ],
)
def test_signals_of_a_reversed_claim(claim: str, kind: str) -> None:
    passage = "The lamp was converted to electricity in 1953. Ticket prices rose in 1953. Fewer boats left after it."
    found = signals(claim, passage)
    assert found[kind], found


def test_no_signal_for_a_faithful_restatement() -> None:
    passage = "The lamp was converted to electricity in 1953 and can be seen from twenty nautical miles."
    assert not any(signals("In 1953 the lamp was converted to electricity, visible from 20 nautical miles.",
                           passage).values())
    passage = "An estimated 964,000 people, about 0.4 percent, reported it in 2017; it will never be the same."
    assert not any(signals("Some 964,000 people reported it in 2017.", passage).values())


def test_passages_are_runs_of_up_to_three_sentences() -> None:
    text = "One two three. Four five six.\nSeven eight nine. Ten."
    out = passages(text)
    assert "One two three." in out and "One two three. Four five six. Seven eight nine." in out
    assert "Four five six. Seven eight nine. Ten." in out
    assert not any("One" in p and "Ten" in p for p in out)


@pytest.mark.parametrize(
    ("text", "negative"),
    [("The office is not open.", True), ("It isn't open.", True), ("It has not been without interest.", False),
     ("A no-cors request is opaque.", False), ("There is simply no way to know.", True), ("It is open.", False)],
)
def test_negation_counts_by_parity(text: str, negative: bool) -> None:
    from orchestrator.audit.support import negated

    assert negated(text) is negative


def test_the_words_outside_a_quote_and_the_quote_kept_intact() -> None:
    claim = only('The source states "Its lamp (a 1953 model, rebuilt) shines; far." ([a](https://x.test/a), '
                 "last updated: 2024-01-02).")
    assert claim.outside.rstrip(" .") == "The source states"
    assert "Its lamp (a 1953 model, rebuilt) shines; far." in claim.plain and "2024" not in claim.plain


def test_a_semicolon_does_not_end_a_claim() -> None:
    first, second = claims_of("Only the diagonal entries are real; Hermitian matrices can have complex entries "
                              "elsewhere ([Hermitian matrix](https://x.test/h), last updated: 2020-02-24). The "
                              "diagonal entries are real numbers.")
    assert first.text.startswith("Only the diagonal") and [c.url for c in first.citations] == ["https://x.test/h"]
    assert second.text.startswith("The diagonal") and not second.citations


PASSAGE = ("The harbour office is not open on Sundays, and the slipway is closed during storms. Treat field data "
           "as the verdict and lab data as the microscope. Ticket prices rose from 10 to 12 euros in 2023 at "
           "Portsmouth.")


@pytest.mark.parametrize(
    ("claim", "feature"),
    [
        ("The harbour office is open on Sundays.", "negation"),
        ("Treat lab data as the verdict and field data as the microscope.", "order"),
        ("Treat lab data as the verdict and field data as the microscope.", "pivot"),
        ("Ticket prices rose from 12 to 10 euros in 2023.", "order"),
        ("Ticket prices rose from 12 to 10 euros in 2023.", "pivot"),
        ("The slipway is not open on Sundays, and the harbour office is closed during storms.", "pivot"),
        ("Ticket prices rose from 10 to 14 euros in 2023.", "numbers"),
        ("Ticket prices rose from 10 to 12 euros in 2023 at Southampton.", "entity"),
        ("Ticket prices fell from 10 to 12 euros in 2023.", "novel"),
        ("The slipway is unclosed during storms.", "prefix"),
    ],
)
def test_support_features_see_each_kind_of_reversal(claim: str, feature: str) -> None:
    from orchestrator.audit.support import features

    faithful = features("The slipway is closed during storms.", PASSAGE, 1.0, None)
    assert all(faithful[k] == 0 for k in ("negation", "order", "numbers", "entity", "novel", "prefix")), faithful
    reversed_ = features(claim, PASSAGE, 1.0, None)
    assert reversed_[feature] > 0, reversed_


@pytest.mark.parametrize("name", ["D'Arcy", "A'Brien", "An'Brien"])
def test_a_name_with_an_apostrophe_replaced_is_another_name(name: str) -> None:
    """A name written with an apostrophe is one word: put in another's place, even one whose first part is a
    function word, it is a name the statement lacks."""
    from orchestrator.audit.support import features

    passage = "The harbour master Kofi O'Brien's new ferry leaves every two hours."
    faithful = features("Kofi O'Brien's new ferry leaves every two hours.", passage, 1.0, None)
    assert faithful["novel"] == faithful["entity_stated"] == 0, faithful
    swapped = features(f"Kofi {name}'s new ferry leaves every two hours.", passage, 1.0, None)
    assert swapped["novel"] > 0 and swapped["entity_stated"] == 1, swapped


@pytest.mark.parametrize(
    "claim",
    [
        "In 2023 ticket prices rose from 10 to 12 euros at Portsmouth.",  # a phrase moved to the front
        "At Portsmouth, ticket prices rose from 10 to 12 euros in 2023.",
        "Ticket prices, in 2023, rose from 10 to 12 euros at Portsmouth.",  # ... to the middle
        "Field data should be treated as the verdict and lab data as the microscope.",  # passive
    ],
)
def test_a_phrase_moved_whole_is_no_pivot(claim: str) -> None:
    """Moving one phrase, whole, keeps every role: only two parts trading sides around a third is a pivot."""
    from orchestrator.audit.support import features

    x = features(claim, PASSAGE, 1.0, None)
    assert x["pivot"] == 0 and x["negation"] == x["numbers"] == x["entity"] == 0, x


def test_a_clause_swapped_around_its_connective_is_a_pivot() -> None:
    from orchestrator.audit.support import features

    passage = "Ticket prices rose by 5 percent after the fuel surcharge was introduced."
    assert features("After the fuel surcharge was introduced, ticket prices rose by 5 percent.", passage, 1.0,
                    None)["pivot"] == 0
    assert features("The fuel surcharge was introduced after ticket prices rose by 5 percent.", passage, 1.0,
                    None)["pivot"] == 1


def test_the_statement_is_where_the_passage_says_the_claim() -> None:
    """A negation in another clause of the sentence says nothing about the claim; one inside its span does."""
    from orchestrator.audit.support import signals

    assert not signals("The slipway is closed during storms.", PASSAGE)["negation"]
    assert signals("The harbour office is open on Sundays.", PASSAGE)["negation"]
    assert not signals("I did not fall out of love with acting, she said.",
                       "I did not fall out of love with acting, she said, and I never will.")["negation"]
