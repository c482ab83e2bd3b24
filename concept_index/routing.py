"""Routing: the concept path a text belongs under (``resolve_path``), used to search a subtree of the store."""

from __future__ import annotations

import numpy as np

from .dag import ROOT, ConceptDag
from .text import content_tokens


def resolve_path(dag: ConceptDag, text: str) -> str | None:
    """The best concept path for ``text`` (an exact path or label first, else the node whose label or
    centroid is most similar, with a small bonus for shared words); None when nothing reaches
    ``route_min``."""
    if not text or not text.strip() or len(dag) <= 1:
        return None
    exact = dag.find(text)
    if exact is not None and exact != ROOT:
        return dag.path(exact)
    vec = dag.vectors([text])[0]
    words = set(content_tokens(text))
    best, best_score = None, -1.0
    for n, data in dag.G.nodes(data=True):
        if n == ROOT:
            continue
        lv = data.get("label_vec")
        s = max(
            float(np.dot(vec, lv)) if lv is not None else 0.0,
            float(np.dot(vec, data["centroid"])) if data.get("centroid") is not None else 0.0,
        )
        lw = set(content_tokens(data["label"]))
        if words and lw:
            s += 0.15 * len(words & lw) / len(words | lw)
        if s > best_score:
            best, best_score = n, s
    if best is None or best_score < dag.config.route_min:
        return None
    return dag.path(best)
