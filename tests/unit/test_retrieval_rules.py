"""Retrieval arithmetic without a store or a model: MMR order and reciprocal rank fusion."""

from __future__ import annotations

import numpy as np

from memory_store.retrieval import RRF_K, mmr_order, rrf


def test_mmr_order_unit():
    a = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    dup = np.array([0.999, 0.0447, 0.0], dtype=np.float32)
    other = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    far = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    vecs = np.stack([a, dup / np.linalg.norm(dup), other, far])
    rel = [1.0, 0.95, 0.9, 0.0]  # scaled to [0, 1] over the pool
    assert mmr_order(vecs, rel, 3, lam=1.0) == [0, 1, 2]
    assert mmr_order(vecs, rel, 2, lam=0.7) == [0, 2]
    assert mmr_order(vecs, [], 3) == []


def test_rrf_terms():
    assert rrf(1) == 1.0 / (RRF_K + 1) and rrf(1) > rrf(2) > rrf(100) > 0
    assert rrf(3, k=0) == 1.0 / 3
