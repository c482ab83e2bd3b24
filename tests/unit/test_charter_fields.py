"""Every charter field does what it says: a table of every leaf field of the charter schema, and for each a probe
whose result changes when the field changes. Fields whose effect is pure logic are probed here (no browser, no
model); the others (``INTEGRATION``) in tests/integration/test_charter_fields.py, with real Chromium, the real
model and a real LanceDB. A field added to the schema without a row fails ``test_every_field_has_a_row``."""

from __future__ import annotations

import asyncio
import copy
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from pydantic import BaseModel

from orchestrator.charter import Charter, parse_charter

#: The charter every row starts from; a row changes one field of it.
BASE: dict[str, Any] = {
    "id": "fields_base",
    "title": "Harbour site",
    "goal": "What does the harbour site say?",
    "allowed_domains": ["127.0.0.1"],
    "seeds": ["http://127.0.0.1:8765/index.html"],
    "acceptance": ["The lamp's date is cited"],
    "outputs": {
        "doc": "out/report.md",
        "sections": [{"title": "Lamp", "label": "LAMP", "question": "When was the lamp electrified?"}],
    },
    "harvest": {"concurrency": 4},
}

#: Fields probed by tests/integration/test_charter_fields.py (their effect needs a browser, the model or a store).
INTEGRATION = frozenset(
    {
        "seeds",
        "acceptance",
        "notes",
        "outputs.sections[].title",
        "outputs.sections[].label",
        "outputs.sections[].question",
        "outputs.sections[].concept",
        "harvest.max_pages",
        "harvest.max_depth",
        "harvest.concurrency",
        "harvest.timeout_s",
        "harvest.obey_robots",
        "harvest.javascript",
        "harvest.render",
        "harvest.block_resources",
        "harvest.ray.embedders",
        "memory.enabled",
        "memory.use_concept_index",
        "memory.persist",
        "memory.storage_options",
        "retrieval.k",
        "retrieval.min_score",
        "retrieval.mode",
        "retrieval.candidates",
        "retrieval.rerank",
        "retrieval.reranker_model",
        "retrieval.mmr_lambda",
    }
)


def leaf_fields(model: type[BaseModel] = Charter, prefix: str = "") -> list[str]:
    """Every leaf field of the schema: nested models are walked, a list of models as ``name[]``."""
    out: list[str] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation = info.annotation
        args = [a for a in get_args(annotation) if isinstance(a, type)]
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out += leaf_fields(annotation, path + ".")
        elif get_origin(annotation) is list and args and issubclass(args[0], BaseModel):
            out += leaf_fields(args[0], path + "[].")
        else:
            out.append(path)
    return out


def with_field(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of ``base`` (default ``BASE``) with ``path`` set to ``value`` (``a[].b``: in the first item)."""
    data = copy.deepcopy(BASE if base is None else base)
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        if part.endswith("[]"):
            node = node.setdefault(part[:-2], [{}])[0]
        else:
            node = node.setdefault(part, {})
    node[parts[-1]] = value
    return data


def charter_of(data: dict[str, Any], folder: Path | None = None) -> Charter:
    return parse_charter(data, source=(folder / "charter.yaml") if folder else "<test>")


# -- probes -------------------------------------------------------------------------------------------------------


def _render(c: Charter) -> str:
    from orchestrator.evidence.render import render_markdown
    from orchestrator.evidence.results import SynthesisResult

    result = SynthesisResult(c.id, c.title, [], 0.3, "model", "2026-11-27T00:00:00Z", 0.0)
    return render_markdown(c, result)


def _store(c: Charter) -> tuple[str, str]:
    from orchestrator.config import open_memory

    mem = open_memory(c)  # nothing is loaded or written until the store is used
    return mem.location, mem.model_name


def _attempts_allowed(c: Charter) -> int:
    from orchestrator.harvest.limits import CrawlBudget

    budget = CrawlBudget.for_settings(c.harvest.model_copy(update={"max_pages": 1000}))
    budget.begin(pages_in_store=0)
    n = 0
    while budget.start() is None and n < 10_000:
        n += 1
    return n


def _stops_at_once(c: Charter) -> str | None:
    from orchestrator.harvest.limits import CrawlBudget

    budget = CrawlBudget.for_settings(c.harvest)
    budget.begin(pages_in_store=0)
    time.sleep(0.02)
    return budget.start()


def _peak_slots(c: Charter) -> int:
    """The most requests to one host that politeness lets run at once (eight asked for at the same time)."""
    from orchestrator.harvest.net.politeness import Politeness

    polite = Politeness(per_domain=c.harvest.per_domain_concurrency, min_delay_s=c.harvest.min_delay_s)
    state = {"now": 0, "peak": 0}

    async def one() -> None:
        async with polite.slot("127.0.0.1"):
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(0.02)
            state["now"] -= 1

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(8)))

    asyncio.run(main())
    return state["peak"]


def _second_start_waited(c: Charter) -> bool:
    """Whether the second request to a host started at least 0.5 s after the first."""
    from orchestrator.harvest.net.politeness import Politeness

    polite = Politeness(per_domain=1, min_delay_s=c.harvest.min_delay_s)
    starts: list[float] = []

    async def main() -> None:
        for _ in range(2):
            async with polite.slot("127.0.0.1"):
                starts.append(time.monotonic())

    asyncio.run(main())
    return starts[1] - starts[0] >= 0.5


def _too_large(c: Charter) -> bool:
    from orchestrator.harvest.models import HarvestEvent
    from orchestrator.harvest.reader import ReadingHost

    host = ReadingHost()
    host.charter, host.settings = c, c.harvest
    return host.over_size(HarvestEvent(url="http://127.0.0.1:8765/a.html", depth=0, started_at="t"), "x" * 5000)


def _region(c: Charter) -> tuple[str | None, str | None]:
    from orchestrator.harvest.extract import extract_page, select_region

    html = (
        "<html><body><nav><p>Harbour navigation: tides, lamp, ferries and the pier timetable.</p></nav><main>"
        "<article><h1>Lamp</h1><p>The lighthouse lamp was converted to electricity in 1953, replacing the "
        "paraffin burner that keepers trimmed every night since the tower opened in 1871.</p></article></main>"
        "</body></html>"
    )
    selector = c.selector_for("127.0.0.1")
    region = select_region(html, selector) if selector else None
    page = extract_page(html, "http://127.0.0.1:8765/a.html", region_html=region, selector=selector if region else None)
    return selector, page.text if page else None


def _engine(c: Charter) -> tuple[bool, str | None]:
    from orchestrator.harvest.run import _engine

    return _engine(c, None)


def _ray_slots(c: Charter) -> tuple[int, int]:
    """(tabs per worker, pages read at once) of a harvest on Ray: the reader's arithmetic (no Ray needed)."""
    from orchestrator.harvest.ray_engine import RayReader

    no_ray = types.SimpleNamespace(exceptions=types.SimpleNamespace())
    reader = RayReader(no_ray, c, c.harvest.ray, Path("/nonexistent"), None)
    return reader.tabs, len(reader.slots())


#: field -> (another value, probe). The probe's result with BASE and with the other value must differ.
UNIT: dict[str, tuple[Any, Callable[[Charter], Any]]] = {
    "id": ("fields_other", _store),
    "title": ("Ferry site", _render),
    "goal": ("Which ferries run in winter?", _render),
    "allowed_domains": (["127.0.0.1", "example.org"], lambda c: c.allows("https://www.example.org/tides")),
    "outputs.doc": ("out/other.md", lambda c: c.doc_path.name),
    "harvest.engine": ("ray", _engine),
    "harvest.ray.workers": (3, _ray_slots),
    "harvest.ray.tabs_per_worker": (1, _ray_slots),
    "harvest.per_domain_concurrency": (1, _peak_slots),
    "harvest.min_delay_s": (1.0, _second_start_waited),
    "harvest.max_page_bytes": (1000, _too_large),
    "harvest.max_attempts": (3, _attempts_allowed),
    "harvest.max_duration_s": (0.001, _stops_at_once),
    "harvest.selectors": ({"127.0.0.1": "nav"}, _region),
    "memory.embedding_model": ("/models/another-model", _store),
    "memory.uri": ("file:///tmp/brt-elsewhere", _store),
}


#: Fields the schema keeps only to refuse them by name (a charter that sets one is invalid), with a value to try.
REFUSED: dict[str, Any] = {
    "harvest.ray.address": "auto",  # where a harvest on Ray runs is the operator's choice (--ray, BRT_RAY_ADDRESS)
}


def test_every_field_has_a_row():
    fields = set(leaf_fields())
    rows = set(UNIT) | INTEGRATION | set(REFUSED)
    assert rows == fields, f"no row for {sorted(fields - rows)}; rows for no field: {sorted(rows - fields)}"
    assert not set(UNIT) & INTEGRATION and not (set(UNIT) | INTEGRATION) & set(REFUSED)


@pytest.mark.parametrize("field", sorted(REFUSED))
def test_a_refused_field_is_refused_by_name(field, tmp_path):
    from orchestrator.errors import CharterError

    with pytest.raises(CharterError, match=field.replace(".", r"\.")):
        charter_of(with_field(field, REFUSED[field]), tmp_path)


@pytest.mark.parametrize("field", sorted(UNIT))
def test_changing_a_field_changes_what_it_governs(field, brt_home, tmp_path):
    value, probe = UNIT[field]
    base, other = charter_of(BASE, tmp_path), charter_of(with_field(field, value), tmp_path)
    assert probe(base) != probe(other), field
