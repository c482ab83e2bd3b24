"""Chunking: windows in tokens, sentence-snapped boundaries, exact slices, stable ids."""

from __future__ import annotations

import random
import re
from itertools import pairwise

import pytest

from memory_store.chunking import (
    chunk_id,
    chunk_text,
    normalize_text,
    split_algo,
    split_units,
    window_for,
)


def words(text: str) -> int:
    """Fake tokenizer: one token per whitespace-separated word."""
    return len(text.split())


WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
)


def make_text(paragraphs: int = 12, seed: int = 1) -> str:
    rnd = random.Random(seed)
    paras = []
    for _ in range(paragraphs):
        sentences = []
        for _ in range(rnd.randint(2, 6)):
            n = rnd.randint(4, 14)
            sentences.append(" ".join(rnd.choice(WORDS) for _ in range(n)).capitalize() + rnd.choice(".!?"))
        paras.append(" ".join(sentences))
    return "\n\n".join(paras)


def check_chunks(text: str, chunks, count, window: int, overlap: int) -> None:
    assert chunks
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.tokens == count(c.text) <= window
        assert c.id == chunk_id(c.text)
    for a, b in pairwise(chunks):
        assert a.start < b.start and a.end < b.end
        if b.start < a.end:
            assert count(text[b.start : a.end]) <= overlap
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_empty_text_gives_no_chunks():
    assert chunk_text("", words) == []
    assert chunk_text("  \n\n \t ", words) == []


def test_windows_overlap_and_sentence_boundaries():
    text = make_text()
    chunks = chunk_text(text, words, window=50, overlap=10)
    check_chunks(text, chunks, words, 50, 10)
    assert len(chunks) > 3
    for c in chunks:
        assert c.text[-1] in ".!?"  # every unit here is a whole sentence
        assert c.text[0].isupper()
    # overlap is used where it can be
    assert any(b.start < a.end for a, b in pairwise(chunks))


def test_batch_counter_gives_same_chunks():
    text = make_text(seed=7)
    one = chunk_text(text, words, window=40, overlap=8)
    batch = chunk_text(
        text, words, window=40, overlap=8, count_tokens_batch=lambda ts: [words(t) for t in ts]
    )
    assert [(c.start, c.end) for c in one] == [(c.start, c.end) for c in batch]


def test_short_text_is_one_chunk():
    text = "One short paragraph. Two sentences."
    chunks = chunk_text(text, words)
    assert len(chunks) == 1 and chunks[0].text == text and chunks[0].tokens == 5


def test_long_unit_is_hard_split():
    text = "Intro sentence here.\n\n" + " ".join(f"w{i}" for i in range(300)) + "\n\nOutro sentence."
    chunks = chunk_text(text, words, window=50, overlap=10)
    check_chunks(text, chunks, words, 50, 10)
    assert max(c.tokens for c in chunks) <= 50
    assert len(chunks) >= 300 // 50


def test_units_snap_to_paragraphs_and_sentences():
    text = "First para. Still first, e.g. this one.\n\nSecond para is here! And Dr. Who? Yes.\nNext line"
    units = [text[s:e] for s, e in split_units(text)]
    assert units == [
        "First para.",
        "Still first, e.g. this one.",
        "Second para is here!",
        "And Dr. Who?",
        "Yes.",
        "Next line",
    ]


def test_ids_stable_under_whitespace_changes():
    assert normalize_text("  a \n\n b\tc  ") == "a b c"
    assert chunk_id("Hello   world.\n\nBye.") == chunk_id("Hello world. Bye.")
    assert chunk_id("Hello world.") != chunk_id("Hello world!")
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", chunk_id("x"))


class _FakeModel:
    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.special_tokens = 2


def test_window_for_clips_to_model():
    assert window_for(_FakeModel(256)) == (254, 50)
    assert window_for(_FakeModel(8192)) == (800, 160)
    assert split_algo(254, 50) == "sliding_254_50"


@pytest.mark.parametrize("seed", [11, 12])
def test_chunking_is_deterministic(seed):
    text = make_text(seed=seed)
    assert chunk_text(text, words, 30, 6) == chunk_text(text, words, 30, 6)
