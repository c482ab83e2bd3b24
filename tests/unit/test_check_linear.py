"""``brt check`` reads a report in time linear in its length (security issue 41, class 5): 256 KB of one
adversarial pattern, each family that made a regular-expression parser quadratic, parsed within a bound far
below what a quadratic parser needs on this size (minutes), and a doubling of the input at most about doubling
the time. Payloads of this project's own making."""

from __future__ import annotations

import time

import pytest

from orchestrator.audit.claims import parse_report

SIZE = 256 * 1024
#: Seconds for one 256 KB input: generous for a loaded 2-core machine (a linear parse takes a few).
BOUND_S = 30.0

PATTERNS = [
    "[", "![", "[a](", "[x][", '"[', "_a*", "**a", "<a", "\\", "[^1]", "[1]", "[12, 13]", "-- a.b ",
    "—a", "--a", "(last updated: ", "; also at x (last updated: y)", "[X Evidence #1] \"",
    "[X Agreement] 2 sources agree on ", "a vs ", "Charter x · generated ", "http://a.", "“", "a. ", "!!", "a\n",
    "[1] http://a.test/\n", "[^1]: x\n", "| a ", "- ", "> ", "1. ", "\u27e6", "\ue000",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_256_kb_of_one_pattern_parses_within_the_bound(pattern: str) -> None:
    text = pattern * (SIZE // len(pattern))
    started = time.monotonic()
    parse_report(text)
    assert time.monotonic() - started < BOUND_S, pattern


def test_time_grows_linearly_with_the_input() -> None:
    """Four times the input takes well under sixteen times as long (a quadratic parse would), on a mix of
    the patterns."""
    mix = "".join(p * 40 for p in PATTERNS if "\n" not in p)
    small, big = mix * 4, mix * 16

    def timed(text: str) -> float:
        best = float("inf")
        for _ in range(2):
            started = time.monotonic()
            parse_report(text)
            best = min(best, time.monotonic() - started)
        return best

    t_small, t_big = timed(small), timed(big)
    assert t_big < 10 * max(t_small, 0.05), (t_small, t_big)
