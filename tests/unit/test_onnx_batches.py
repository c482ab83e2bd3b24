"""The ONNX embedder's batching (``memory_store.onnx_backend.padded_batches``): longest first, at most
``batch_size`` texts and ``max_tokens`` padded tokens a batch (a longer text alone), every text once."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from memory_store.onnx_backend import padded_batches


def _encs(lengths: list[int]) -> list[SimpleNamespace]:
    return [SimpleNamespace(ids=list(range(1, n + 1)), type_ids=[0] * n) for n in lengths]


def test_batches_hold_at_most_the_token_budget_and_every_text_once():
    lengths = [256, 12, 130, 40, 7, 300, 128, 64, 64, 3, 90, 250]
    seen: list[int] = []
    for idx, feeds in padded_batches(_encs(lengths), 32, max_tokens=256):
        rows, width = feeds["input_ids"].shape
        assert width == max(lengths[i] for i in idx)
        assert rows == 1 or rows * width <= 256
        assert feeds["attention_mask"].sum(axis=1).tolist() == [lengths[i] for i in idx]
        seen.extend(int(i) for i in idx)
    assert sorted(seen) == list(range(len(lengths)))
    assert [lengths[i] for i in seen] == sorted(lengths, reverse=True)  # longest first


def test_batch_size_caps_rows_and_no_budget_keeps_fixed_batches():
    short = _encs([4] * 100)
    assert [len(idx) for idx, _ in padded_batches(short, 32, max_tokens=256)] == [32, 32, 32, 4]
    assert [len(idx) for idx, _ in padded_batches(short, 10)] == [10] * 10
    idx, feeds = next(padded_batches(_encs([0, 0]), 8, max_tokens=256))  # empty encodings do not divide by 0
    assert len(idx) == 2 and feeds["input_ids"].shape == (2, 0) and np.all(feeds["attention_mask"] == 0)
