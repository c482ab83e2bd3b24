"""Fit brt check's support model (``orchestrator/audit/models/support.json``): a logistic regression over the
features of ``orchestrator/audit/support.py`` that tells a page's statement from its reversal.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/fit_support.py --eval-dir ../shared/eval [--per-page 5] [--seed 42] \\
        [--out orchestrator/audit/models/support.json]

Data recipe (nothing is copied into the repository; the pages are read from ``--eval-dir``):

- pages: the 106 news and blog pages of ``web-qa-train/web-qa-train.json`` (the training pool of the
  article-extraction benchmark, which no evaluation set of the project uses), their gold text
  (``article-extraction-benchmark/ground-truth.json.gz``, ``articleBody``);
- claims: per page up to ``--per-page`` sentences of 8 to 40 words (seeded sample), each **restated**,
  **partially restated**, with a phrase **moved** ("…, in 2023." as "In 2023, …"), **reworded** (a word or two
  replaced by a synonym from ``SYNONYMS`` below) and **joined** with the sentence after it ("A, and b."; label 1,
  scored against its own page) and **reversed** in every way of
  ``bench/_claim_variants.py`` that applies (negation, an antonym from ``OPPOSITES`` below, a negative prefix
  from ``PREFIXED``, a number changed, two numbers swapped, a name replaced, two words or names swapped; label
  0), plus the restated claim scored against **another page** of the same charter (misattributed, label 0);
- features: ``support.closest`` on the page's passages, the closest statement's ``support.features`` (the
  bundled embedding model).

Fitting: standardised features, ``sklearn`` logistic regression (classes balanced), C chosen by 5-fold cross-
validation grouped by page: the C whose out-of-fold probabilities, at the cut-off that keeps 99% of the faithful
claims, catch the most of the worst-caught reversal kind (then of all kinds). The out-of-fold probabilities give
the reported figures and the cut-offs: ``weak`` is the highest value that keeps at least 99% of out-of-fold
faithful claims at or above it (false alarms at most 1%), ``supported`` the value that 90% of them reach. The file
records the seed, C, the recipe, the counts and the cross-validated figures; ``models/manifest.json`` its sha256
(checked on load). Every kind is fitted on; ``MEASURED_ONLY`` names kinds to measure without fitting on them (none
since the word lexicon's features tell a synonym from an opposite).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._claim_variants import joined, moved, page_names, restate, reversals, reworded, symmetric  # noqa: E402

#: Opposites the training claims use (``bench/check_report.py`` seeds its reports with others, none in common).
OPPOSITES = symmetric(
    "increase:decrease increased:decreased rose:fell rising:falling higher:lower high:low more:less most:least "
    "before:after early:late earlier:later first:last win:lose won:lost winning:losing strong:weak strongest:weakest "
    "good:bad best:worst better:worse large:small larger:smaller big:small biggest:smallest long:short longer:shorter "
    "open:closed opened:closed start:end started:ended begin:end began:ended success:failure successful:failed "
    "true:false positive:negative above:below over:under up:down rich:poor wealthy:poor hot:cold warm:cold "
    "easy:difficult easier:harder young:old younger:older new:old newest:oldest support:oppose supported:opposed "
    "accept:reject accepted:rejected allow:ban allowed:banned legal:illegal agree:disagree agreed:disagreed "
    "majority:minority maximum:minimum rise:fall gain:loss gained:lost expand:shrink expanded:shrank "
    "inside:outside north:south east:west always:never everyone:nobody all:none buy:sell bought:sold "
    "import:export imports:exports ahead:behind love:hate safe:dangerous cheap:expensive cheaper:costlier"
)
PREFIXED = symmetric(
    "likely:unlikely able:unable known:unknown popular:unpopular usual:unusual clear:unclear fair:unfair "
    "happy:unhappy common:uncommon certain:uncertain expected:unexpected possible:impossible legal:illegal "
    "responsible:irresponsible regular:irregular honest:dishonest agree:disagree appear:disappear "
    "visible:invisible effective:ineffective official:unofficial profitable:unprofitable"
)


#: Synonyms the training rewordings use (``bench/check_report.py`` rewords its clean reports with others, none in
#: common): the faithful claims that replace a word, which the reversals' antonyms must be told from.
SYNONYMS = symmetric(
    "said:stated says:states told:informed announced:declared rose:increased rise:increase rising:increasing "
    "fell:dropped fall:drop falling:dropping big:large bigger:larger biggest:largest begin:start began:started "
    "beginning:starting help:assist helped:assisted helps:assists show:demonstrate showed:demonstrated "
    "shows:demonstrates need:require needs:requires needed:required use:employ used:employed get:obtain "
    "got:obtained buy:purchase bought:purchased about:approximately around:roughly many:numerous often:frequently "
    "quickly:rapidly maybe:perhaps enough:sufficient important:significant main:principal mainly:chiefly "
    "almost:nearly whole:entire completely:entirely end:finish ended:finished try:attempt tried:attempted "
    "keep:retain kept:retained give:provide gave:provided gives:provides build:construct built:constructed "
    "hard:difficult people:individuals children:kids car:automobile cars:automobiles country:nation "
    "firm:company firms:companies area:region areas:regions result:outcome results:outcomes aim:goal "
    "chance:opportunity problem:issue problems:issues answer:response rule:regulation rules:regulations "
    "job:position jobs:positions speed:pace total:overall leader:head leaders:heads meeting:gathering "
    "wants:wishes wanted:wished"
)


def load_pages(eval_dir: Path) -> list[tuple[str, str, str]]:
    """(charter id, page id, gold text) of every page of the training charters."""
    gold = json.loads(gzip.decompress((eval_dir / "article-extraction-benchmark" / "ground-truth.json.gz")
                                      .read_bytes()))
    out = []
    for charter in json.loads((eval_dir / "web-qa-train" / "web-qa-train.json").read_text()):
        for page in charter["pages"]:
            body = (gold.get(page["case"]) or {}).get("articleBody") or ""
            if len(body.split()) >= 80:
                out.append((charter["id"], page["case"], body))
    return out


def claims_of(pages: list[tuple[str, str, str]], per_page: int, rng: random.Random) -> list[dict]:
    """The claims (text, page it is scored against, label, kind, page group) of the recipe."""
    from memory_store.text import sentences

    by_charter: dict[str, list[str]] = {}
    for cid, pid, _ in pages:
        by_charter.setdefault(cid, []).append(pid)
    out = []
    for cid, pid, text in pages:
        names = page_names(text)
        all_sentences = sentences(text)
        following = dict(zip(all_sentences, all_sentences[1:], strict=False))
        candidates = [s for s in all_sentences if 8 <= len(s.split()) <= 40 and not s.endswith("?")
                      and "|" not in s]
        for s in rng.sample(candidates, min(per_page, len(candidates))):
            claim = restate(s)
            out.append({"text": claim, "page": pid, "label": 1, "kind": "restated", "group": pid})
            partial = restate(s, partial=True)
            if partial != claim:
                out.append({"text": partial, "page": pid, "label": 1, "kind": "partial", "group": pid})
            shifted = moved(claim)
            if shifted:
                out.append({"text": shifted, "page": pid, "label": 1, "kind": "moved", "group": pid})
            other_words = reworded(claim, rng, SYNONYMS)
            if other_words:
                out.append({"text": other_words, "page": pid, "label": 1, "kind": "reworded", "group": pid})
            nxt = following.get(s)
            if nxt and len(nxt.split()) <= 30 and not nxt.endswith("?"):
                out.append({"text": restate(joined(s, nxt)), "page": pid, "label": 1, "kind": "joined", "group": pid})
            for kind, reversed_ in reversals(claim, rng, opposites=OPPOSITES, prefixed=PREFIXED,
                                              names=names).items():
                out.append({"text": reversed_, "page": pid, "label": 0, "kind": kind, "group": pid})
            others = [p for p in by_charter[cid] if p != pid]
            if others:
                out.append({"text": claim, "page": rng.choice(others), "label": 0, "kind": "misattributed",
                            "group": pid})
    return out


def featurize(claims: list[dict], texts: dict[str, str]) -> list[list[float]]:
    from memory_store.embeddings import full_precision
    from orchestrator.audit import support

    embedder = full_precision()
    page_passages = {pid: support.passages(text) for pid, text in texts.items()}
    rows = []
    for i, c in enumerate(claims):
        cands = support.closest(c["text"], page_passages[c["page"]], embedder, score=False)
        best = max(cands, key=lambda x: x.closeness)
        x = best.features or support.features(c["text"], best.passage, 0.0, embedder)
        rows.append([x[f] for f in support.FEATURES])
        if i % 500 == 0:
            print(f"[fit] features {i}/{len(claims)}", file=sys.stderr, flush=True)
    return rows


#: Kinds measured, not fitted on (their fold models never see one; the cut-offs leave them out). Empty: the
#: reworded claims were here until the lexicon features (to the others, a synonym is an opposite).
MEASURED_ONLY: frozenset[str] = frozenset()


def fit(x: list[list[float]], y: list[int], groups: list[str], seed: int, kinds_: list[str]) -> dict:
    """Standardised logistic regression, C by grouped 5-fold cross-validation; every claim gets an out-of-fold
    probability, the ``MEASURED_ONLY`` kinds from models fitted without them."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss, roc_auc_score
    from sklearn.model_selection import GroupKFold

    xa, ya, kinds = np.array(x), np.array(y), np.array(kinds_)
    fitted_on = ~np.isin(kinds, sorted(MEASURED_ONLY))
    mean, scale = xa[fitted_on].mean(axis=0), xa[fitted_on].std(axis=0)
    scale[scale == 0] = 1.0
    xs = (xa - mean) / scale
    folds = list(GroupKFold(n_splits=5).split(xs, ya, groups))
    best = None
    for c in (0.01, 0.03, 0.1, 0.3, 1.0, 10.0):
        oof = np.zeros(len(ya))
        for train, test in folds:
            train = train[fitted_on[train]]
            model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced",
                                       random_state=seed).fit(xs[train], ya[train])
            oof[test] = model.predict_proba(xs[test])[:, 1]
        faithful = np.sort(oof[(ya == 1) & fitted_on])
        weak = faithful[int(0.01 * len(faithful))]
        caught = [float((oof[(ya == 0) & (kinds == k)] < weak).mean()) for k in set(kinds[ya == 0])]
        score = (min(caught), float(np.mean(caught)))  # the worst reversal kind first, then all of them
        if best is None or score > best[0]:
            best = (score, c, oof, log_loss(ya[fitted_on], oof[fitted_on]))
    assert best is not None
    _, c, oof, loss = best
    final = LogisticRegression(C=c, max_iter=2000, class_weight="balanced",
                               random_state=seed).fit(xs[fitted_on], ya[fitted_on])
    auroc = roc_auc_score(ya[fitted_on], oof[fitted_on])
    return {"C": c, "cv_log_loss": round(float(loss), 4), "cv_auroc": round(float(auroc), 4),
            "oof": oof.tolist(), "weights": final.coef_[0].tolist(), "bias": float(final.intercept_[0]),
            "mean": mean.tolist(), "scale": scale.tolist()}


def cutoffs(oof: list[float], y: list[int], kinds: list[str]) -> dict[str, float]:
    faithful = sorted(p for p, label, k in zip(oof, y, kinds, strict=True) if label == 1 and k not in MEASURED_ONLY)
    weak = faithful[int(0.01 * len(faithful))]
    supported = faithful[int(0.10 * len(faithful))]
    return {"weak": round(max(0.01, weak - 1e-4), 4), "supported": round(max(weak, supported), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--per-page", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--pages", type=int, default=0, help="only this many pages (a quick trial; 0: all)")
    ap.add_argument("--dump", default=None, help="also write the claims and their features here (JSON)")
    ap.add_argument("--features-from", default=None,
                    help="fit on the claims and features a --dump wrote (same FEATURES) instead of computing them")
    ap.add_argument("--out", default=str(REPO_ROOT / "orchestrator" / "audit" / "models" / "support.json"))
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.monotonic()
    rng = random.Random(args.seed)
    pages = load_pages(Path(args.eval_dir).expanduser().resolve())
    pages = pages[: args.pages] if args.pages else pages
    if args.features_from:
        dumped = json.loads(Path(args.features_from).read_text())
        claims, x = dumped["claims"], dumped["x"]
    else:
        claims = claims_of(pages, args.per_page, rng)
        x = featurize(claims, {pid: text for _, pid, text in pages})
    if args.dump:
        from orchestrator.audit.support import FEATURES as names

        Path(args.dump).write_text(json.dumps({"features": list(names), "claims": claims, "x": x}))
    y = [c["label"] for c in claims]
    fitted = fit(x, y, [c["group"] for c in claims], args.seed, [c["kind"] for c in claims])
    cut = cutoffs(fitted["oof"], y, [c["kind"] for c in claims])
    from collections import Counter

    from orchestrator.audit.support import FEATURES

    by_kind = {}
    for kind in sorted({c["kind"] for c in claims}):
        probs = [p for p, c in zip(fitted["oof"], claims, strict=True) if c["kind"] == kind]
        below = sum(1 for p in probs if p < cut["weak"])
        by_kind[kind] = {"n": len(probs), "below_weak": below, "rate": round(below / len(probs), 4),
                         "fitted_on": kind not in MEASURED_ONLY}
    doc = {
        "about": "brt check's support model: P(the passage's statement supports the claim). Card: README.md.",
        "script": "bench/fit_support.py",
        "command": " ".join(["python", "bench/fit_support.py", *(argv if argv is not None else sys.argv[1:])]),
        "seed": args.seed,
        "data": {"pages": len(pages), "claims": len(claims), "per_page": args.per_page,
                 "kinds": dict(Counter(c["kind"] for c in claims)),
                 "recipe": "web-qa-train pages' gold text; claims restated, partly restated, with a phrase "
                           "moved, reworded (SYNONYMS), joined with the next sentence, reversed "
                           "(bench/_claim_variants.py, OPPOSITES and PREFIXED of bench/fit_support.py) and "
                           "misattributed to another page of the charter"},
        "model": {"features": list(FEATURES), "weights": [round(w, 6) for w in fitted["weights"]],
                  "bias": round(fitted["bias"], 6), "mean": [round(m, 6) for m in fitted["mean"]],
                  "scale": [round(s, 6) for s in fitted["scale"]], "C": fitted["C"]},
        "cutoffs": cut,
        "cross_validation": {"folds": "5, grouped by page", "log_loss": fitted["cv_log_loss"],
                             "auroc": fitted["cv_auroc"], "by_kind_below_weak": by_kind},
        "fit_seconds": round(time.monotonic() - t0, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, indent=1) + "\n").encode("utf-8")
    out.write_bytes(data)
    manifest = out.parent / "manifest.json"
    files = json.loads(manifest.read_text())["files"] if manifest.is_file() else {}
    files[out.name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest.write_text(json.dumps({"card": "README.md", "files": files}, indent=1) + "\n")
    summary = {k: v for k, v in doc.items() if k != "model"}
    print(json.dumps(summary, indent=1))
    from bench._common import write_result

    write_result("fit_support", summary)  # bench/results/fit_support.json: the latest fit's figures
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
