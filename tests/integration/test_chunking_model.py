"""Chunking with the real model's tokenizer (the unit tier's tests/unit/test_chunking.py uses a word counter)."""

from __future__ import annotations

from memory_store.chunking import chunk_with, window_for
from tests.unit.test_chunking import check_chunks, make_text


def test_real_tokenizer_windows(embedder):
    window, overlap = window_for(embedder)
    assert (window, overlap) == (254, 50)
    text = make_text(paragraphs=60, seed=3) + "\n\n" + "supercalifragilistic " * 400
    chunks = chunk_with(embedder, text)
    check_chunks(text, chunks, embedder.count_tokens, window, overlap)
