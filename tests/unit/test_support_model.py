"""brt check's support model file: it loads with its recorded sha256, names only features the code computes, and
an altered copy is refused (every model file is hash-checked on load)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.audit.support import FEATURES, MODEL_PATH, SupportModelError, load_model


def test_the_shipped_model_loads_and_reads_known_features() -> None:
    model = load_model()
    assert set(model.features) <= set(FEATURES) and 0 < model.weak <= model.supported < 1
    doc = json.loads(MODEL_PATH.read_text())
    assert doc["script"] == "bench/fit_support.py" and doc["seed"] is not None and doc["data"]["recipe"]
    assert "auroc" in doc["cross_validation"]


def test_an_altered_copy_is_refused(tmp_path: Path) -> None:
    import hashlib

    data = MODEL_PATH.read_bytes()
    copy = tmp_path / "support.json"
    copy.write_bytes(data)
    (tmp_path / "support.json.sha256").write_text(hashlib.sha256(data).hexdigest())
    assert load_model(str(copy)).sha256 == hashlib.sha256(data).hexdigest()
    doc = json.loads(data)
    doc["model"]["bias"] += 5
    copy.write_text(json.dumps(doc))
    with pytest.raises(SupportModelError, match="does not match"):
        load_model(str(copy))


def test_a_model_naming_an_unknown_feature_is_refused(tmp_path: Path) -> None:
    doc = json.loads(MODEL_PATH.read_text())
    doc["model"]["features"][0] = "mood"
    copy = tmp_path / "other.json"
    copy.write_text(json.dumps(doc))
    with pytest.raises(SupportModelError, match="not among"):
        load_model(str(copy))


def test_the_word_lexicon_loads_checked_and_relates_words_by_meaning() -> None:
    from orchestrator.audit.support import load_lexicon

    lexicon = load_lexicon()
    assert lexicon.related("tiny", "small") == (True, False)  # an adjective with its cluster's head
    assert lexicon.related("purchased", "bought") == (True, False)  # regular and irregular forms
    assert lexicon.related("alive", "dead")[1] and not lexicon.related("alive", "dead")[0]
    assert lexicon.related("swift", "slow")[1]  # opposed through the cluster ("swift" stands with "fast")
    assert lexicon.related("harbour", "slowly") == (False, False)
    assert lexicon.meanings("qwxzv") == frozenset()


def test_an_altered_lexicon_is_refused(tmp_path: Path) -> None:
    import gzip
    import hashlib

    from orchestrator.audit.support import LEXICON_PATH, load_lexicon

    data = LEXICON_PATH.read_bytes()
    copy = tmp_path / "lexicon.json.gz"
    doc = json.loads(gzip.decompress(data))
    doc["words"]["slow"] = doc["words"]["fast"]
    copy.write_bytes(gzip.compress(json.dumps(doc).encode()))
    (tmp_path / "lexicon.json.gz.sha256").write_text(hashlib.sha256(data).hexdigest())
    with pytest.raises(SupportModelError, match="does not match"):
        load_lexicon(str(copy))
