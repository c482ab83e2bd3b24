"""The evidence scorer: one function from a quote's ``Features`` to the probability that it answers the section's
question, with weights fitted on dev data (``bench/fit_evidence_scorer.py``), never tuned by hand.

The model is a logistic regression over the standardised features, then a calibration of its logit on each
section's best candidate (so that ``p`` reads as "the probability that this quote answers the question"). A
first logistic regression without the reader's features (``pre``) picks the ``read_top`` candidates the reader
reads; only those can be evidence. The weights file also carries the two bars fitted with it, the one
documented place they live:

- ``threshold``: a section gets a block only when its best quote's ``p`` reaches it, else a Gap (the charter's
  ``retrieval.min_score`` replaces it when set);
- ``second``: every further block (a distinct answer, or the same answer on another page) must reach it too.

The shipped file is ``models/scorer.json``; its sha256 is recorded in ``models/manifest.json`` and checked on load.
``BRT_EVIDENCE_SCORER`` names another weights file (the benchmarks' held-out folds); a ``<file>.sha256`` beside
it is checked when present.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EvidenceModelError
from .features import FEATURES, Features

MODELS = Path(__file__).resolve().parent / "models"
DEFAULT_SCORER = MODELS / "scorer.json"
MANIFEST = MODELS / "manifest.json"
#: Standardised features are clipped to +-CLIP: a value far outside the dev data cannot dominate the logit.
CLIP = 6.0


@dataclass(frozen=True)
class Linear:
    """A logistic regression's logit over standardised features (each clipped to +-CLIP)."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def logits(self, rows: Sequence[Features]) -> list[float]:
        out = []
        for f in rows:
            z = self.intercept
            for v, m, s, w in zip(f.row(), self.mean, self.scale, self.coef, strict=True):
                if w:
                    z += w * min(CLIP, max(-CLIP, (v - m) / s))
            out.append(z)
        return out


@dataclass(frozen=True)
class Scorer:
    """Fitted weights and the bars fitted with them. ``pre`` (no reader features) orders a section's candidates
    so that the reader reads the best ``read_top`` of them; ``final`` (with the reader) gives their logit, and
    ``probabilities`` the calibrated probability. Without a ``pre`` model there is no reader stage."""

    path: str
    sha256: str
    features: tuple[str, ...]
    pre: Linear | None
    final: Linear
    calibration: tuple[float, float]  # (a, b): p = sigmoid(a * logit + b)
    threshold: float
    second: float
    read_top: int

    def pre_logits(self, rows: Sequence[Features]) -> list[float]:
        return (self.pre or self.final).logits(rows)

    def probabilities(self, rows: Sequence[Features]) -> list[float]:
        a, b = self.calibration
        return [_sigmoid(a * z + b) for z in self.final.logits(rows)]


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def evidence_threshold(min_score: float | None = None, scorer: Scorer | None = None) -> float:
    """The one place the evidence bar is resolved: a section's first block must reach ``min_score`` (the charter's
    ``retrieval.min_score``, a probability) when it is set, else the threshold fitted with the scorer."""
    if min_score is not None:
        return float(min_score)
    return (scorer or load_scorer()).threshold


def scorer_path() -> Path:
    """The weights file in use: ``BRT_EVIDENCE_SCORER`` when set, else the shipped one."""
    from ..settings import run_settings

    return run_settings().evidence_scorer or DEFAULT_SCORER


def recorded_sha256(path: Path) -> str | None:
    """The sha256 recorded for ``path``: the manifest's entry for a shipped file, else a ``.sha256`` beside it."""
    resolved, models = path.resolve(), MODELS.resolve()
    if resolved.is_relative_to(models) and MANIFEST.is_file():
        files = json.loads(MANIFEST.read_text(encoding="utf-8")).get("files", {})
        entry = files.get(resolved.relative_to(models).as_posix())
        return entry.get("sha256") if isinstance(entry, dict) else None
    side = path.with_name(path.name + ".sha256")
    return side.read_text(encoding="utf-8").split()[0] if side.is_file() else None


def load_scorer(path: str | os.PathLike[str] | None = None) -> Scorer:
    """Load and check a weights file (default: ``scorer_path()``); cached per path and content."""
    p = Path(path) if path is not None else scorer_path()
    try:
        data = p.read_bytes()
    except OSError as e:
        raise EvidenceModelError(f"evidence scorer {p}: cannot read ({e.strerror or e})") from None
    return _parse(str(p), data, recorded_sha256(p))


@functools.lru_cache(maxsize=8)
def _parse(path: str, data: bytes, recorded: str | None) -> Scorer:
    digest = hashlib.sha256(data).hexdigest()
    if recorded is not None and recorded != digest:
        raise EvidenceModelError(
            f"evidence scorer {path}: sha256 {digest[:12]}… does not match the recorded {recorded[:12]}…"
        )
    try:
        doc: dict[str, Any] = json.loads(data)
        model = doc["model"]
        names = tuple(model["features"])
        scorer = Scorer(
            path=path,
            sha256=digest,
            features=names,
            pre=_linear(doc["pre"]) if doc.get("pre") else None,
            final=_linear(model),
            calibration=(float(model["calibration"][0]), float(model["calibration"][1])),
            threshold=float(doc["threshold"]),
            second=float(doc["second"]),
            read_top=int(doc.get("read_top") or 0),
        )
    except (ValueError, KeyError, TypeError, IndexError) as e:
        raise EvidenceModelError(f"evidence scorer {path}: not a weights file ({type(e).__name__}: {e})") from None
    sizes = {len(m.mean) for m in (scorer.final, scorer.pre) if m} | {
        len(m.scale) for m in (scorer.final, scorer.pre) if m} | {len(m.coef) for m in (scorer.final, scorer.pre) if m}
    if names != FEATURES or sizes != {len(names)}:
        raise EvidenceModelError(
            f"evidence scorer {path}: fitted on other features than this version computes "
            f"({len(names)} against {len(FEATURES)}); refit it with bench/fit_evidence_scorer.py"
        )
    return scorer


def _linear(doc: dict[str, Any]) -> Linear:
    return Linear(
        mean=tuple(float(x) for x in doc["mean"]),
        scale=tuple(float(x) or 1.0 for x in doc["scale"]),
        coef=tuple(float(x) for x in doc["coef"]),
        intercept=float(doc["intercept"]),
    )
