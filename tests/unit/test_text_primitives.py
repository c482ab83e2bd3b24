"""The primitives of ``memory_store.text`` written once: word and number shapes, the month table, the passage
windower; and the one cache of text vectors (``memory_store.embeddings.TextVectors``)."""

from __future__ import annotations

import numpy as np

from memory_store.embeddings import TextVectors
from memory_store.text import (
    NUMBER_SHAPES,
    WORD_SHAPES,
    month_number,
    number_pattern,
    number_value,
    sentence_windows,
    tokens,
    word_pattern,
)


def test_each_shape_reads_what_its_use_needs():
    text = "Node.js and C++ run HTTP/3 at 1,500.5 req/s (don't) — state-of-the-art snake_case"
    assert tokens(text) == ["Node", "js", "and", "C", "run", "HTTP", "3", "at", "1", "500", "5", "req", "s", "don",
                            "t", "state", "of", "the", "art", "snake", "case"]
    assert "Node.js" in tokens(text, "query") and "C++" in tokens(text, "query")
    assert "HTTP/3" in tokens(text, "name") and "don't" in tokens(text, "contraction")
    assert "state-of-the-art" in tokens(text, "letters") and "snake_case" in tokens(text, "identifier")
    assert set(WORD_SHAPES) >= {"word", "label", "term"} and set(NUMBER_SHAPES) >= {"run", "quantity"}
    assert word_pattern("label") is word_pattern("label")  # compiled once


def test_number_shapes_and_values():
    text = "COVID-19 hit 1,500.5 people in 2020, not 3.4.5"
    assert number_pattern("run").findall(text) == ["19", "1,500.5", "2020,", "3.4.5"]
    assert [m.group(0) for m in number_pattern("quantity").finditer(text)] == ["1,500.5", "2020"]
    assert number_value("1,500.5") == 1500.5
    assert number_pattern("mention", ignore_case=True).search("Twenty sheep") is not None


def test_one_month_table():
    assert [month_number(w) for w in ("March", "sept", "Dec.", "mayor", "")] == [3, 9, 12, 5, 0]


def test_the_windower_ends_the_runs_from_a_start_where_take_refuses():
    windows = sentence_windows(4, 3, lambda lo, hi: None if hi == 2 else (lo, hi))
    assert windows == [(0, 0), (0, 1), (1, 1), (3, 3)]
    assert sentence_windows(0, 3, lambda lo, hi: (lo, hi)) == []


def test_text_vectors_embed_each_text_once_and_keep_order():
    batches: list[list[str]] = []

    def embed(texts: list[str]) -> list[np.ndarray]:
        batches.append(list(texts))
        return [np.full(2, len(t), dtype=np.float32) for t in texts]

    cache = TextVectors(embed, lambda: 2, limit=3)
    assert cache(["ab", "c", "ab"])[:, 0].tolist() == [2.0, 1.0, 2.0]
    assert cache(["c", "dddd"])[:, 0].tolist() == [1.0, 4.0] and batches == [["ab", "c"], ["dddd"]]
    cache(["eeeee"])  # past the limit: the cache starts again
    assert cache(["ab"])[0, 0] == 2.0 and batches[-1] == ["ab"]
    assert cache([]).shape == (0, 2)
