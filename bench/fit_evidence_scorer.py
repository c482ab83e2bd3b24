"""Fit the evidence scorer (``orchestrator/evidence/scorer.py``) on the dev dumps, with cross-validation.

    .venv/bin/python bench/fit_evidence_scorer.py /tmp/features-webqa.json.gz /tmp/features-squad.json.gz \\
        /tmp/features-news.json.gz [--folds 3] [--l2 1.0] [--seed 0] [--ablate GROUP ...] \\
        [--write orchestrator/evidence/models/scorer.json] [--folds-dir DIR] [--json report.json]

The dumps come from ``bench/evidence_features.py`` (one per domain). What is fitted, and how:

1. **The model**: an L2-regularised logistic regression over the standardised ``Features`` of every candidate
   quote, label "the quote holds the answer". Each question weighs the same within its domain, and each domain
   the same in all (SQuAD has ten times more questions than the others).
2. **The calibration**: ``p = sigmoid(a * logit + b)`` fitted on each question's best candidate (label: it holds
   the answer; 0 for an unanswerable question), on out-of-fold logits, so that ``p`` reads as the probability
   that the section's first block answers it.
3. **The bars**: ``threshold`` (a first block, else a Gap) and ``second`` (every further block), chosen on the
   same out-of-fold predictions by running the real ``orchestrator.evidence.select`` over a grid: the threshold
   that maximises the mean over domains of the share of sections whose first line is right (a first block that
   holds the answer, or a Gap for a question nothing answers), then the second bar that maximises answer@k +
   precision (``--objective sum``: both at once on answer@1 + answer@k + precision + Gap rate).

Cross-validation: the questions are split into ``--folds`` folds by group (fold ``i`` holds web-qa charter ``i``,
and a share of the SQuAD articles and news events, dealt in order), so a held-out fold's pages and questions
were never seen by its model, its calibration or its bars (those come from an inner split of the training folds).
The report gives the held-out folds' figures per domain and kind; the shipped file is then fitted on every fold
(its calibration and bars from out-of-fold predictions over all of them). ``--folds-dir`` writes each fold's
model as ``<web-qa charter id>.json`` for ``bench/evidence_webqa.py --scorer-folds`` (the held-out figure through
the real CLI). Deterministic: the same dumps and arguments give the same file (``--seed`` orders nothing random
today; it is recorded for the recipe).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import _candidate_features as candidate_groups  # noqa: E402
from orchestrator.evidence.features import FEATURES, READER_FEATURES, Features, with_reader  # noqa: E402
from orchestrator.evidence.scorer import MODELS  # noqa: E402
from orchestrator.evidence.select import Scored, select  # noqa: E402

#: Feature groups for ablations (``--ablate``): a group stays only where cross-validation shows it adds.
GROUPS = {
    "embedding": ("cos", "cos_max", "cos_first", "cos_later", "cos_rel", "cos_max_rel", "cos_topic", "cos_heading",
                  "cos_title", "chunk_cos", "chunk_rank", "section_best"),
    "lexical": ("bm25", "bm25_log", "cover", "cover_plain", "cover_rel", "novelty", "restate", "question_terms",
                "unmatched"),
    "position": ("opener", "para_pos", "page_pos", "after_heading", "is_heading", "crosses_paragraph"),
    "reader": READER_FEATURES,
    **candidate_groups.GROUPS,  # tried only with --candidates
}
assert {f for g in ("embedding", "lexical", "position", "reader") for f in GROUPS[g]} == set(FEATURES)
#: The columns of a question's ``x``: the shipped features, then the candidate groups asked for (``--candidates``).
NAMES: list[str] = list(FEATURES)
CANDIDATES: list[str] = []
#: The precision the further blocks must keep on the held-out folds: the second bar maximises answer@k under it.
PRECISION_FLOOR = 0.65
K = 5  # blocks per section, as the benchmarks' charters ask
CLIP = 6.0  # standardised features are clipped to +-CLIP (orchestrator/evidence/scorer.py does the same)
THRESHOLDS = tuple(round(x, 3) for x in np.arange(0.05, 0.951, 0.025))


@dataclass
class Q:
    dataset: str
    group: str
    charter: str
    kind: str
    answerable: bool
    question: str
    x: np.ndarray  # (candidates, features)
    y: np.ndarray
    spans: list  # what select needs, per candidate


def load(paths: list[str]) -> list[Q]:
    out = []
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
        dumped = doc["features_version"]
        if dumped != list(FEATURES)[: len(dumped)] or set(FEATURES[len(dumped) :]) - set(READER_FEATURES):
            raise SystemExit(f"{path}: dumped with other features; dump it again with bench/evidence_features.py")
        pad = len(FEATURES) - len(dumped)  # the reader's features are filled here, not dumped
        for q in doc["questions"]:
            cands = q["candidates"]
            x = np.array([c["x"] + [0.0] * pad + candidate_groups.candidate_row(CANDIDATES, q["question"], c)
                          for c in cands], dtype="float64").reshape(len(cands), len(NAMES))
            y = np.array([c["y"] for c in cands], dtype="float64")
            spans = [SimpleNamespace(url=c["url"], keys=frozenset(c["keys"]), quote=c["quote"], words=c["words"],
                                     reading=c.get("reading", c["quote"]), chunk=SimpleNamespace(rank=c["rank"]))
                     for c in cands]
            out.append(Q(q["dataset"], q["group"], q["charter"], q["kind"], q["answerable"], q["question"], x, y,
                         spans))
    return out


def assign_folds(qs: list[Q], n: int) -> list[int]:
    """Fold of each question: groups dealt round-robin per domain in order of first appearance (web-qa's three
    charters become folds 0, 1, 2)."""
    fold_of: dict[tuple[str, str], int] = {}
    per_domain: dict[str, int] = {}
    for q in qs:
        key = (q.dataset, q.group)
        if key not in fold_of:
            fold_of[key] = per_domain.get(q.dataset, 0) % n
            per_domain[q.dataset] = per_domain.get(q.dataset, 0) + 1
    return [fold_of[(q.dataset, q.group)] for q in qs]


# -- the model ----------------------------------------------------------------------------------------------


def _weights(qs: list[Q]) -> np.ndarray:
    per_domain: dict[str, int] = {}
    for q in qs:
        per_domain[q.dataset] = per_domain.get(q.dataset, 0) + 1
    parts = []
    for q in qs:
        n = len(q.y)
        if n:
            parts.append(np.full(n, 1.0 / (n * per_domain[q.dataset])))
    w = np.concatenate(parts) if parts else np.zeros(0)
    return w / w.sum() * len(w)


def fit_lr(qs: list[Q], l2: float, mask: np.ndarray) -> dict:
    """Weighted L2 logistic regression by Newton's method on the standardised, unmasked features."""
    x = np.concatenate([q.x for q in qs if len(q.y)])
    y = np.concatenate([q.y for q in qs if len(q.y)])
    w = _weights(qs)
    mean = (x * w[:, None]).sum(0) / w.sum()
    scale = np.sqrt(((x - mean) ** 2 * w[:, None]).sum(0) / w.sum())
    scale[scale < 1e-9] = 1.0
    z = np.clip((x - mean) / scale, -CLIP, CLIP) * mask
    z1 = np.hstack([z, np.ones((len(z), 1))])
    beta = np.zeros(z1.shape[1])
    reg = np.full(z1.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(z1 @ beta, -30, 30)))
        grad = z1.T @ (w * (p - y)) + reg * beta
        hess = (z1 * (w * p * (1 - p))[:, None]).T @ z1 + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    coef = beta[:-1] * mask
    return {"features": list(NAMES), "mean": mean.tolist(), "scale": scale.tolist(), "coef": coef.tolist(),
            "intercept": float(beta[-1])}


def fit_listwise(qs: list[Q], l2: float, mask: np.ndarray) -> dict:
    """A linear ranking model fitted listwise: per answerable question, the log of the softmax mass of the
    candidates that hold the answer (several may), by Newton's method with L2 on the standardised, unmasked
    features; questions weighted as in ``fit_lr``. The intercept stays 0 (a ranking has none); calibration
    gives the probabilities."""
    pool = [q for q in qs if q.answerable and len(q.y) and q.y.any()]
    x_all = np.concatenate([q.x for q in qs if len(q.y)])
    w_all = _weights([q for q in qs if len(q.y)])
    mean = (x_all * w_all[:, None]).sum(0) / w_all.sum()
    scale = np.sqrt(((x_all - mean) ** 2 * w_all[:, None]).sum(0) / w_all.sum())
    scale[scale < 1e-9] = 1.0
    per_domain: dict[str, int] = {}
    for q in pool:
        per_domain[q.dataset] = per_domain.get(q.dataset, 0) + 1
    zs = [np.clip((q.x - mean) / scale, -CLIP, CLIP) * mask for q in pool]
    weight = np.array([1.0 / per_domain[q.dataset] for q in pool])
    weight = weight / weight.sum() * len(pool)
    beta = np.zeros(len(NAMES))

    def loss(b: np.ndarray) -> float:
        total = 0.5 * l2 * float(b @ b)
        for z, q, w in zip(zs, pool, weight, strict=True):
            s = z @ b
            total += w * (np.logaddexp.reduce(s) - np.logaddexp.reduce(s[q.y > 0]))
        return total

    for _ in range(40):
        grad = l2 * beta
        hess = np.diag(np.full(len(beta), l2 + 1e-9))
        for z, q, w in zip(zs, pool, weight, strict=True):
            s = z @ beta
            pos = q.y > 0
            pa = np.exp(s - s.max())
            pa /= pa.sum()
            pp = np.where(pos, np.exp(s - s[pos].max()), 0.0)
            pp /= pp.sum()
            ma, mp = pa @ z, pp @ z
            grad += w * (ma - mp)
            hess += w * (((z * pa[:, None]).T @ z - np.outer(ma, ma)) - ((z * pp[:, None]).T @ z - np.outer(mp, mp)))
        # the positives' term is concave, so the Hessian may lose definiteness: damp it
        evals = np.linalg.eigvalsh(hess)
        damp = max(0.0, 1e-6 - float(evals.min()))
        step = np.linalg.solve(hess + np.eye(len(beta)) * damp, grad)
        before, scale_ = loss(beta), 1.0
        while loss(beta - scale_ * step) > before and scale_ > 1e-4:
            scale_ /= 2
        beta -= scale_ * step
        if np.abs(scale_ * step).max() < 1e-7:
            break
    return {"features": list(NAMES), "mean": mean.tolist(), "scale": scale.tolist(),
            "coef": (beta * mask).tolist(), "intercept": 0.0}


def logits(model: dict, x: np.ndarray) -> np.ndarray:
    if not len(x):
        return np.zeros(0)
    m, s, c = (np.asarray(model[k]) for k in ("mean", "scale", "coef"))
    return np.clip((x - m) / s, -CLIP, CLIP) @ c + model["intercept"]


def fit_platt(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(a, b) of sigmoid(a z + b): damped Newton on the log loss with a unit Gaussian prior on (a - 1, b), so
    that a few separable points cannot send it to infinity."""
    a, b = 1.0, 0.0

    def loss(a: float, b: float) -> float:
        t = a * z + b
        return float(np.logaddexp(0, t).sum() - (y * t).sum() + 0.5 * ((a - 1) ** 2 + b**2))

    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(a * z + b, -30, 30)))
        g = np.array([((p - y) * z).sum() + (a - 1), (p - y).sum() + b])
        h = p * (1 - p)
        hess = np.array([[(h * z * z).sum() + 1, (h * z).sum()], [(h * z).sum(), h.sum() + 1]])
        step = np.linalg.solve(hess, g)
        scale, before = 1.0, loss(a, b)
        while loss(a - scale * step[0], b - scale * step[1]) > before and scale > 1e-4:
            scale /= 2
        a, b = a - scale * step[0], b - scale * step[1]
        if np.abs(scale * step).max() < 1e-9:
            break
    return float(a), float(b)


# -- selection and metrics -----------------------------------------------------------------------------------


def blocks_of(q: Q, p: np.ndarray, threshold: float, second: float) -> list[int]:
    """Indices of the candidates the real ``select`` keeps for ``q``."""
    scored = [Scored(s, None, float(v)) for s, v in zip(q.spans, p, strict=True)]  # type: ignore[arg-type]
    chosen = select(scored, k=K, threshold=threshold, second=second)
    index = {id(c): i for i, c in enumerate(scored)}
    return [index[id(c)] for c in chosen]


def metrics(qs: list[Q], picks: list[list[int]]) -> dict:
    ans = [(q, b) for q, b in zip(qs, picks, strict=True) if q.answerable]
    una = [(q, b) for q, b in zip(qs, picks, strict=True) if not q.answerable]
    out: dict = {"questions": len(qs)}
    if ans:
        nb = sum(len(b) for _, b in ans)
        out["answer@1"] = sum(1 for q, b in ans if b and q.y[b[0]]) / len(ans)
        out["answer@k"] = sum(1 for q, b in ans if any(q.y[i] for i in b)) / len(ans)
        out["precision"] = sum(q.y[i] for q, b in ans for i in b) / nb if nb else 0.0
        out["blocks"] = nb / len(ans)
    if una:
        out["gap_unanswerable"] = sum(1 for _, b in una if not b) / len(una)
    # the share of sections whose first line is right: a block that holds the answer, or a Gap where none does
    right = sum(1 for q, b in ans if b and q.y[b[0]]) + sum(1 for _, b in una if not b)
    out["section_accuracy"] = right / len(qs) if qs else 0.0
    return out


ALL_TERMS = ("answer@1", "answer@k", "precision", "gap_unanswerable")
FIRST_TERMS = ("section_accuracy",)
SECOND_TERMS = ("answer@k", "precision")


def objective(qs: list[Q], picks: list[list[int]], terms: tuple[str, ...] = ALL_TERMS) -> float:
    """Mean over domains of the sum of ``terms`` (by default answer@1 + answer@k + precision + Gap rate on
    unanswerable questions)."""
    total, domains = 0.0, sorted({q.dataset for q in qs})
    for d in domains:
        sub = [(q, b) for q, b in zip(qs, picks, strict=True) if q.dataset == d]
        m = metrics([q for q, _ in sub], [b for _, b in sub])
        total += sum(m.get(k, 0.0) for k in terms)
    return total / max(1, len(domains))


def choose_bars(qs: list[Q], probs: list[np.ndarray]) -> tuple[float, float]:
    """The bars, each a mean over the domains, every point of the grid running the real ``select``: the threshold
    that maximises the share of sections whose first line is right (a block that holds the answer, or a Gap where
    nothing answers), then the second bar (every further block) that maximises answer@k while the blocks'
    precision stays at PRECISION_FLOOR or above (the highest-precision bar where none does)."""

    def picks(t: float, s: float) -> list[list[int]]:
        return [blocks_of(q, p, t, s) for q, p in zip(qs, probs, strict=True)]

    t = max(THRESHOLDS, key=lambda x: (round(objective(qs, picks(x, 2.0), FIRST_TERMS), 9), -x))
    grid = []
    for x in (x for x in THRESHOLDS if x >= t):
        chosen = picks(t, x)
        grid.append((x, objective(qs, chosen, ("answer@k",)), objective(qs, chosen, ("precision",))))
    ok = [g for g in grid if g[2] >= PRECISION_FLOOR - 1e-9]
    s = max(ok, key=lambda g: (round(g[1], 9), g[0]))[0] if ok else max(grid, key=lambda g: (g[2], g[0]))[0]
    return t, s


def calibrate(qs: list[Q], z: list[np.ndarray]) -> tuple[float, float]:
    top = [(float(v.max()), float(q.y[int(v.argmax())])) for q, v in zip(qs, z, strict=True) if len(v)]
    arr = np.array(top)
    return fit_platt(arr[:, 0], arr[:, 1])


LOSS = "pointwise"
#: The roles of the domains (datasets), set from the command line:
#: - BARS_WITHOUT_UNANSWERABLE: their unanswerable questions do not choose the bars (SQuAD 2.0's are written
#:   against one paragraph to look answerable); they still fit the models and the calibration, and are scored;
#: - BARS_ONLY: never fit the models' weights; they calibrate and choose the bars, and are scored (web-qa dev,
#:   which is for evaluation and the choice of thresholds only);
#: - EVAL_ONLY: never fit anything; only scored on the held-out folds (SciFact questions: their licence).
BARS_WITHOUT_UNANSWERABLE: set[str] = set()
BARS_ONLY: set[str] = set()
EVAL_ONLY: set[str] = set()
READER_FOLDS: str | None = None


def fit_model(qs: list[Q], l2: float, mask: np.ndarray) -> dict:
    """The scoring model by LOSS, on the questions whose domain fits weights: ``listwise`` (ranking,
    ``fit_listwise``) or ``pointwise`` (``fit_lr``)."""
    qs = [q for q in qs if q.dataset not in BARS_ONLY | EVAL_ONLY]
    return fit_listwise(qs, l2, mask) if LOSS == "listwise" else fit_lr(qs, l2, mask)


def oof_logits(qs: list[Q], folds: list[int], l2: float, mask: np.ndarray) -> list[np.ndarray]:
    out: list[np.ndarray] = [np.zeros(0)] * len(qs)
    for f in sorted(set(folds)):
        train = [q for q, g in zip(qs, folds, strict=True) if g != f]
        model = fit_model(train, l2, mask)
        for i, (q, g) in enumerate(zip(qs, folds, strict=True)):
            if g == f:
                out[i] = logits(model, q.x)
    return out


def fit_all(qs: list[Q], n_folds: int, l2: float, mask: np.ndarray) -> dict:
    """Model on ``qs`` (the domains that fit weights); calibration and bars from an inner out-of-fold split of
    ``qs`` (evaluation-only domains left out)."""
    qs = [q for q in qs if q.dataset not in EVAL_ONLY]
    model = fit_model(qs, l2, mask)
    inner = assign_folds(qs, n_folds)
    z = oof_logits(qs, inner, l2, mask)
    a, b = calibrate(qs, z)
    probs = [1 / (1 + np.exp(-(a * v + b))) for v in z]
    keep = [i for i, q in enumerate(qs) if q.answerable or q.dataset not in BARS_WITHOUT_UNANSWERABLE]
    t, s = choose_bars([qs[i] for i in keep], [probs[i] for i in keep])
    model["calibration"] = [a, b]
    return {"model": model, "threshold": t, "second": s}


def predict(fitted: dict, q: Q) -> np.ndarray:
    a, b = fitted["model"]["calibration"]
    return 1 / (1 + np.exp(-(a * logits(fitted["model"], q.x) + b)))


def report_of(qs: list[Q], picks: list[list[int]]) -> dict:
    out: dict = {}
    for d in sorted({q.dataset for q in qs}):
        sub = [(q, b) for q, b in zip(qs, picks, strict=True) if q.dataset == d]
        row = {"all": _round(metrics([q for q, _ in sub], [b for _, b in sub]))}
        for kind in sorted({q.kind for q, _ in sub}):
            ks = [(q, b) for q, b in sub if q.kind == kind]
            row[kind] = _round(metrics([q for q, _ in ks], [b for _, b in ks]))
        out[d] = row
    return out


def reliability(qs: list[Q], probs: list[np.ndarray], picks: list[list[int]]) -> dict:
    """Calibration of the first block's p on held-out folds: bins of p against the share that holds the answer."""
    pairs = [(float(p[b[0]]), float(q.y[b[0]])) for q, p, b in zip(qs, probs, picks, strict=True) if b]
    bins = []
    for lo in (0.0, 0.2, 0.4, 0.6, 0.8):
        inside = [(p, y) for p, y in pairs if lo <= p < lo + 0.2 or (lo == 0.8 and p == 1.0)]
        if inside:
            bins.append({"p": f"{lo:.1f}-{lo + 0.2:.1f}", "n": len(inside),
                         "mean_p": round(sum(p for p, _ in inside) / len(inside), 3),
                         "holds_answer": round(sum(y for _, y in inside) / len(inside), 3)})
    ece = sum(b["n"] * abs(b["mean_p"] - b["holds_answer"]) for b in bins) / max(1, len(pairs))
    return {"bins": bins, "ece": round(ece, 4)}


def _round(m: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()}


def cross_validate(
    qs: list[Q], n_folds: int, l2: float, mask: np.ndarray, folds_dir: str | None, pre: dict | None = None,
    read_top: int = 0,
) -> dict:
    """Held-out figures; ``pre`` (fold -> the reader stage's first model trained without that fold) goes into
    the per-fold files."""
    folds = assign_folds(qs, n_folds)
    picks: list[list[int]] = [[] for _ in qs]
    probs: list[np.ndarray] = [np.zeros(0)] * len(qs)
    bars = []
    for f in range(n_folds):
        train = [q for q, g in zip(qs, folds, strict=True) if g != f]
        fitted = fit_all(train, n_folds, l2, mask)
        bars.append({"fold": f, "threshold": fitted["threshold"], "second": fitted["second"]})
        held = [q for q, g in zip(qs, folds, strict=True) if g == f]
        if folds_dir:
            ids = sorted({q.charter for q in held if q.dataset not in ("squad", "news")})
            for cid in ids:
                extra = {"held_out_fold": f, "read_top": read_top, "pre": (pre or {}).get(f)}
                write_scorer(Path(folds_dir) / f"{cid}.json", fitted, extra)
        for i, (q, g) in enumerate(zip(qs, folds, strict=True)):
            if g == f:
                probs[i] = predict(fitted, q)
                picks[i] = blocks_of(q, probs[i], fitted["threshold"], fitted["second"])
    return {"held_out": report_of(qs, picks), "bars_per_fold": bars,
            "calibration_held_out": reliability(qs, probs, picks), "objective": round(objective(qs, picks), 4)}


def write_scorer(path: Path, fitted: dict, extra: dict) -> str:
    doc = {"format": "brt-evidence-scorer/1", "threshold": fitted["threshold"], "second": fitted["second"],
           "model": {**fitted["model"], "kind": "logistic regression, Platt-calibrated on each section's best"},
           **extra}
    data = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n")
    return digest


def mask_of(ablate: list[str], read_top: int) -> np.ndarray:
    """1 for every column the model may use: the candidate groups asked for are in ``NAMES``; ``ablate``'s
    groups (and the reader's, without a reader stage) are 0."""
    mask = np.ones(len(NAMES))
    for g in [*ablate, *([] if read_top else ["reader"])]:
        for name in GROUPS[g]:
            if name in NAMES:
                mask[NAMES.index(name)] = 0.0
    return mask


def ablations(qs: list[Q], args: argparse.Namespace, groups: list[str]) -> dict:
    """Held-out figures with each of ``groups`` left out (and the reader alone beside the embedding), each the
    whole pipeline again: the reader stage's first model too."""
    out = {}
    runs = [(f"without {g}", [*args.ablate, g]) for g in groups]
    runs.append(("reader + embedding only", sorted({"lexical", "position", *args.ablate} - {"reader"})))
    for name, ablate in runs:
        mask = mask_of(ablate, args.read_top)
        cv_qs = reader_stage(qs, args.folds, args.l2, mask, args.read_top, args.reader_cache)[0] if args.read_top \
            else qs
        cv = cross_validate(cv_qs, args.folds, args.l2, mask, None)
        out[name] = {d: r["all"] for d, r in cv["held_out"].items()}
        print(f"[fit] ablation {name}: done", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dumps", nargs="+")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ablate", nargs="*", default=[], choices=sorted(GROUPS))
    ap.add_argument("--candidates", nargs="*", default=[], choices=sorted(candidate_groups.GROUPS),
                    help="candidate feature groups to try (bench/_candidate_features.py); not with --write")
    ap.add_argument("--ablation", nargs="*", default=[], choices=sorted(GROUPS),
                    help="also report the held-out figures with each of these groups left out")
    ap.add_argument("--write", default=None, help="fit on everything and write the weights file here")
    ap.add_argument("--folds-dir", default=None)
    ap.add_argument("--json", dest="json_out", default=None)
    ap.add_argument("--read-top", type=int, default=0, help="the reader reads this many candidates (0: no reader)")
    ap.add_argument("--loss", choices=["listwise", "pointwise"], default="pointwise", help="how the model is fitted")
    ap.add_argument("--reader-cache", default=None, help="cache of reader logits (json.gz), kept across runs")
    ap.add_argument("--reader-folds", default=None,
                    help="bench/train_reader.py's fold models (fold-a/, fold-b/, folds.json): cross-fitted reader "
                    "logits for the questions of the sets the reader trains on")
    ap.add_argument("--bars-without-unanswerable", nargs="*", default=[], metavar="DATASET",
                    help="these domains' unanswerable questions do not choose the bars (they still train the models "
                    "and the calibration, and are scored), e.g. squad: SQuAD 2.0's are written against one "
                    "paragraph to look answerable, unlike a research question no page answers")
    ap.add_argument("--bars-only", nargs="*", default=[], metavar="DATASET",
                    help="these domains never fit weights: they calibrate, choose the bars and are scored")
    ap.add_argument("--eval-only", nargs="*", default=[], metavar="DATASET",
                    help="these domains are only scored on the held-out folds")
    args = ap.parse_args(argv)
    if args.write and args.candidates:
        ap.error("--candidates is for trying groups; a shipped scorer uses orchestrator/evidence/features.py only")

    global LOSS, BARS_WITHOUT_UNANSWERABLE, BARS_ONLY, EVAL_ONLY, READER_FOLDS, NAMES, CANDIDATES
    LOSS, READER_FOLDS = args.loss, args.reader_folds
    BARS_WITHOUT_UNANSWERABLE, BARS_ONLY, EVAL_ONLY = (set(args.bars_without_unanswerable), set(args.bars_only),
                                                      set(args.eval_only))
    CANDIDATES = list(args.candidates)
    NAMES = [*FEATURES, *candidate_groups.columns(CANDIDATES)]
    qs = load(args.dumps)
    mask = mask_of(args.ablate, args.read_top)
    report = {"dumps": [Path(p).name for p in args.dumps], "questions": len(qs), "folds": args.folds,
              "l2": args.l2, "ablate": args.ablate, "candidates": args.candidates, "seed": args.seed,
              "read_top": args.read_top, "loss": args.loss, "precision_floor": PRECISION_FLOOR,
              "bars_without_unanswerable": args.bars_without_unanswerable, "bars_only": args.bars_only,
              "eval_only": args.eval_only, "reader_folds": args.reader_folds}
    pre_models: dict | None = None
    final_qs = qs
    if args.read_top:
        qs, final_qs, pre_models = reader_stage(qs, args.folds, args.l2, mask, args.read_top, args.reader_cache)
    report["cv"] = cross_validate(qs, args.folds, args.l2, mask, args.folds_dir, pre_models and {
        f: m for f, m in pre_models.items() if f != "all"}, args.read_top)
    if args.ablation:
        report["ablations"] = ablations(load(args.dumps), args, args.ablation)
    if args.write:
        fitted = fit_all(final_qs, args.folds, args.l2, mask)
        recipe = {"command": " ".join(["bench/fit_evidence_scorer.py", *(argv or sys.argv[1:])]),
                  "dumps": {Path(p).name: _sha256(p) for p in args.dumps}, "seed": args.seed,
                  "cross_validated": report["cv"]["held_out"], "ablations": report.get("ablations")}
        extra = {"recipe": recipe, "read_top": args.read_top, "pre": (pre_models or {}).get("all")}
        digest = write_scorer(Path(args.write), fitted, extra)
        if Path(args.write).resolve().parent == MODELS.resolve():
            Path(args.write).with_name(Path(args.write).name + ".sha256").unlink()
            record_models()
        report["written"] = {"path": args.write, "sha256": digest, "threshold": fitted["threshold"],
                             "second": fitted["second"]}
        report["weights"] = dict(zip(NAMES, (round(c, 4) for c in fitted["model"]["coef"]), strict=True))
    print(json.dumps(report, indent=1))
    from bench._common import write_result

    write_result("evidence_scorer", report)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


def reader_stage(
    qs: list[Q], n_folds: int, l2: float, mask: np.ndarray, read_top: int, cache_path: str | None
) -> tuple[list[Q], list[Q], dict]:
    """The reader stage as ``orchestrator.evidence.section.score_candidates`` runs it: a first model without
    the reader's features orders each question's candidates, the reader reads the best ``read_top``, and only
    those go on. For cross-validation a question's candidates are ordered by the first model of the folds that
    do not hold it; for the shipped file, by the first model fitted on all. Returns (the questions as the
    held-out folds see them, as the shipped file sees them, the first models by fold and "all")."""
    pre_mask = mask.copy()
    for name in READER_FEATURES:
        pre_mask[NAMES.index(name)] = 0.0
    folds = assign_folds(qs, n_folds)
    pre: dict = {}
    oof: list[np.ndarray] = [np.zeros(0)] * len(qs)
    fits = BARS_ONLY | EVAL_ONLY
    for f in range(n_folds):
        pre[f] = fit_lr([q for q, g in zip(qs, folds, strict=True) if g != f and q.dataset not in fits], l2, pre_mask)
        for i, (q, g) in enumerate(zip(qs, folds, strict=True)):
            if g == f:
                oof[i] = logits(pre[f], q.x)
    pre["all"] = fit_lr([q for q in qs if q.dataset not in fits], l2, pre_mask)
    tops_cv = [list(np.argsort(-v, kind="stable")[:read_top]) for v in oof]
    tops_all = [list(np.argsort(-logits(pre["all"], q.x), kind="stable")[:read_top]) for q in qs]
    cache = ReaderCache(cache_path, READER_FOLDS)
    for q, a, b in zip(qs, tops_cv, tops_all, strict=True):
        cache.need(q, [q.spans[i].reading for i in sorted(set(a) | set(b))])
    cache.run()
    return [_read(q, t, cache) for q, t in zip(qs, tops_cv, strict=True)], [
        _read(q, t, cache) for q, t in zip(qs, tops_all, strict=True)], pre


def _read(q: Q, top: list[int], cache: ReaderCache) -> Q:
    n = len(FEATURES)
    rows = [Features(*q.x[i][:n]) for i in top]
    with_reader(rows, [cache.get(q, q.spans[i].reading) for i in top])
    x = np.array([[*r.row(), *q.x[i][n:]] for r, i in zip(rows, top, strict=True)],
                 dtype="float64").reshape(len(rows), len(NAMES))
    return Q(q.dataset, q.group, q.charter, q.kind, q.answerable, q.question, x, q.y[top], [q.spans[i] for i in top])


class ReaderCache:
    """Reader logits by (reader, question, quote), kept in a json.gz file between runs. A question is read by the
    reader that never trained on it (cross-fitting): with ``folds`` (``bench/train_reader.py``'s folder of fold
    models and its ``folds.json``), a question of a set the reader trains on is read by the model of the fold
    that left it out; every other question by the reader ``brt`` ships (or the one ``BRT_EVIDENCE_READER``
    names)."""

    def __init__(self, path: str | None, folds: str | None = None) -> None:
        self.path = Path(path) if path else None
        self.folds = Path(folds) if folds else None
        self.fold_of: dict[str, str] = {}
        if self.folds is not None:
            self.fold_of = json.loads((self.folds / "folds.json").read_text(encoding="utf-8"))
        self.logits: dict[str, float] = {}
        self.todo: dict[tuple[str, str], list[str]] = {}
        if self.path and self.path.is_file():
            with gzip.open(self.path, "rt", encoding="utf-8") as fh:
                self.logits = json.load(fh)

    def reader_of(self, q: Q) -> str:
        """``final`` or the fold model's folder name (``fold-a`` / ``fold-b``)."""
        fold = self.fold_of.get(f"{q.dataset}|{q.group}")
        return f"fold-{fold}" if fold else "final"

    def key(self, q: Q, quote: str) -> str:
        return hashlib.sha1(f"{self.reader_of(q)}\x00{q.question}\x00{quote}".encode()).hexdigest()

    def need(self, q: Q, quotes: list[str]) -> None:
        missing = [x for x in dict.fromkeys(quotes) if self.key(q, x) not in self.logits]
        if missing:
            self.todo.setdefault((self.reader_of(q), q.question), []).extend(missing)

    def _reader(self, name: str):
        from orchestrator.evidence.reader import Reader, load_reader

        if name == "final":
            return load_reader()
        assert self.folds is not None
        d = self.folds / name
        return Reader(d / "reader.onnx", d / "reader-tokenizer" / "tokenizer.json")

    def run(self) -> None:
        if not self.todo:
            return
        readers = {name: self._reader(name) for name in {r for r, _ in self.todo}}
        total = sum(len(v) for v in self.todo.values())
        done = 0
        for (name, question), quotes in self.todo.items():
            for k, z in zip(quotes, readers[name].logits(question, quotes), strict=True):
                self.logits[hashlib.sha1(f"{name}\x00{question}\x00{k}".encode()).hexdigest()] = round(float(z), 5)
            done += len(quotes)
            if done % 2000 < len(quotes):
                print(f"[fit] reader: {done}/{total} pairs", file=sys.stderr)
        self.todo = {}
        if self.path:
            with gzip.open(self.path, "wt", encoding="utf-8") as fh:
                json.dump(self.logits, fh)

    def get(self, q: Q, quote: str) -> float:
        return self.logits[self.key(q, quote)]


def record_models() -> dict:
    """Write ``models/manifest.json``: the sha256 and size of every shipped model file (the scorer, the reader and
    its tokenizer), which ``orchestrator/evidence`` checks on load."""
    files = {}
    for name in ("scorer.json", "reader.onnx", "reader-tokenizer/tokenizer.json"):
        path = MODELS / name
        if path.is_file():
            files[name] = {"sha256": _sha256(str(path)), "bytes": path.stat().st_size}
    doc = {"files": files, "card": "README.md"}
    (MODELS / "manifest.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return doc


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


if __name__ == "__main__":
    raise SystemExit(main())
