"""Task charters: the pydantic schema of docs/contracts.md ("Charter"), loading from YAML or JSON, and validation
errors that name the file and the field path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from memory_store.errors import BrtException

from .egress import EgressPolicy
from .egress import host_allowed as host_allowed  # the allowlist's semantics live in egress; the API keeps these
from .egress import url_allowed as url_allowed
from .errors import CharterError

CHARTER_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}\Z")
#: The largest charter file brt reads (a charter is a few kilobytes).
MAX_CHARTER_BYTES = 1_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class Section(_Strict):
    title: str = Field(min_length=1)
    label: str | None = None
    question: str | None = None
    concept: str | None = None

    @property
    def effective_label(self) -> str:
        return self.label or self.title

    @property
    def effective_question(self) -> str:
        return self.question or self.title


class Outputs(_Strict):
    doc: str = "out/report.md"
    sections: list[Section] = Field(default_factory=list)


#: Subresource types a harvest may abort (Playwright's resource types; documents, scripts, XHR/fetch and
#: WebSockets are never blocked by type, since the text or the scripts that build it may need them).
BlockableResource = Literal["image", "media", "font", "stylesheet", "texttrack", "manifest"]
#: The text mode's default: what the extracted text never needs.
TEXT_MODE_BLOCKED: tuple[str, ...] = ("image", "media", "font")


class RayOptions(_Strict):
    """``harvest.ray`` (docs/storage.md, "Harvest on Ray"): how wide a harvest on Ray runs. Where it runs (the
    cluster's address) is the operator's choice alone (``BRT_RAY_ADDRESS`` or ``brt harvest --ray ADDRESS``):
    a charter that names one is refused."""

    # security: a charter or an agent never chooses a host brt connects to outside the egress guard
    address: SkipJsonSchema[str | None] = Field(None, exclude=True)
    workers: int = Field(2, ge=1, le=1024, description="Ray actors that each run one headless Chromium")
    tabs_per_worker: int | None = Field(
        None, ge=1, le=32, description="pages each worker reads at a time; null = concurrency / workers, rounded up"
    )
    embedders: int = Field(1, ge=1, le=256, description="Ray actors that hold the embedding model")

    @field_validator("address", mode="before")
    @classmethod
    def _no_address(cls, value: object) -> None:
        if value is not None:
            raise ValueError(
                "a charter may not name a Ray address: where a harvest on Ray runs is the operator's choice "
                "(BRT_RAY_ADDRESS, or brt harvest --ray ADDRESS); leave it out (a local Ray instance is started "
                "for the run)"
            )
        return None


class Harvest(_Strict):
    # local: one browser in this process; ray: fanned out on Ray (docs/storage.md, "Harvest on Ray";
    # pip install 'brt[ray]')
    engine: Literal["local", "ray"] = "local"
    ray: RayOptions = Field(default_factory=RayOptions)
    max_pages: int = Field(50, ge=1, le=100_000)
    max_depth: int = Field(1, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=32)
    timeout_s: float = Field(30, gt=0, le=600)
    obey_robots: bool = True
    javascript: bool = True
    # docs/harvest.md, "Render only when needed": auto reads each page from the HTML brt fetched and renders it in
    # the browser only when the page needs it (harvest/render_need.py); always renders every page; never none.
    render: Literal["auto", "always", "never"] = "auto"
    # Harvest hardening (docs/harvest.md): per-host politeness and the per-page cap on decoded content.
    per_domain_concurrency: int = Field(2, ge=1, le=32)
    min_delay_s: float = Field(0.0, ge=0, le=60)
    max_page_bytes: int = Field(20_000_000, ge=1000)
    # Bounds of one run (docs/harvest.md, "Bounded crawls"; harvest/limits.py): URLs attempted whatever their
    # outcome (null = 4 x max_pages) and wall time in seconds (null = 3600).
    max_attempts: int | None = Field(
        None, ge=1, le=1_000_000,
        description="URLs one harvest run attempts at most, whatever their outcome; null = 4 x max_pages",
    )
    max_duration_s: float | None = Field(
        None, gt=0, le=7 * 24 * 3600, description="Wall time of one harvest run in seconds; null = 3600"
    )
    selectors: dict[str, str] = Field(default_factory=dict)
    # Text mode (docs/harvest.md, "Text mode"): subresources of these types are aborted before they are
    # requested; [] = off.
    block_resources: list[BlockableResource] = Field(default_factory=lambda: list(TEXT_MODE_BLOCKED))

    @field_validator("block_resources")
    @classmethod
    def _unique_resources(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("lists a resource type twice")
        return value


class MemoryConfig(_Strict):
    enabled: bool = True
    use_concept_index: bool = False  # kNN only unless a charter asks (routing did not help on SQuAD)
    persist: bool = False
    # A FlagEmbedding model name or local path; null = the bundled all-MiniLM-L6-v2.
    embedding_model: str | None = None
    # docs/storage.md, "Store on object storage": where stores live (s3://bucket/prefix, any URI LanceDB
    # supports, or a local folder); null = $BRT_HOME/memory. BRT_STORE_URI overrides it.
    uri: str | None = None
    # Options of the object store (endpoint, region, credentials, allow_http); the standard AWS_* variables
    # work too. Held in memory only: never written to the store, snapshots, events or logs.
    storage_options: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)


class Retrieval(_Strict):
    k: int = Field(5, ge=1, le=100)
    min_score: float | None = Field(None, ge=-1.0, le=1.0)
    # Retrieval pipeline (docs/retrieval.md): candidates per side, fusion mode, optional rerank, MMR.
    mode: Literal["hybrid", "vector", "bm25"] = "hybrid"
    candidates: int = Field(20, ge=1, le=1000)
    rerank: bool = False
    reranker_model: str | None = None
    mmr_lambda: float | None = Field(0.7, ge=0.0, le=1.0)


class Charter(_Strict):
    id: str
    title: str = Field(min_length=1)
    goal: str | None = None
    allowed_domains: list[str] = Field(min_length=1)
    seeds: list[str] = Field(min_length=1)
    acceptance: list[str] = Field(default_factory=list)
    outputs: Outputs = Field(default_factory=Outputs)
    notes: str | None = None
    harvest: Harvest = Field(default_factory=Harvest)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    retrieval: Retrieval = Field(default_factory=Retrieval)

    # Not part of the schema: where the charter was loaded from (relative paths resolve against its folder).
    _source: Path | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _check_raw_id(cls, value: object) -> object:
        # before str_strip_whitespace: "abc\n" or "abc\u3000" is an error, not the id "abc" (the id names the
        # store and, for `brt charter init`, the file)
        if isinstance(value, str) and value != value.strip():
            raise ValueError(f"{value!r} has whitespace around it: an id must match [a-z0-9][a-z0-9_-]{{0,63}} "
                             "exactly")
        return value

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not CHARTER_ID_RE.match(value):
            raise ValueError(
                "must match [a-z0-9][a-z0-9_-]{0,63} (lower-case letters, digits, '_' and '-'; it names the "
                "store and is never a path)"
            )
        return value

    @field_validator("allowed_domains")
    @classmethod
    def _check_domains(cls, value: list[str]) -> list[str]:
        return EgressPolicy.parse_domains(value)

    @model_validator(mode="after")
    def _check_seeds(self) -> Charter:
        from .url_safety import CREDENTIALS_REASON, parse  # security: WHATWG parsing

        for i, seed in enumerate(self.seeds):
            parts = parse(seed)
            if parts is None or parts.scheme not in ("http", "https") or not parts.host:
                raise _FieldError(f"seeds.{i}", f"{seed!r} is not an absolute http(s) URL")
            if parts.has_credentials:
                raise _FieldError(f"seeds.{i}", f"{seed!r}: {CREDENTIALS_REASON}")
            if not EgressPolicy.of(self.allowed_domains).permits_host(parts.host):
                raise _FieldError(
                    f"seeds.{i}", f"{seed!r} is not on allowed_domains ({', '.join(self.allowed_domains)})"
                )
        egress = EgressPolicy.of(self.allowed_domains)
        for domain in self.harvest.selectors:
            if not egress.permits_host(domain.lower()):
                raise _FieldError(
                    f"harvest.selectors.{domain}", "names a domain that is not on allowed_domains"
                )
        return self

    # -- derived values -------------------------------------------------------------------------------------

    @property
    def source(self) -> Path | None:
        return self._source

    @property
    def base_dir(self) -> Path:
        return self._source.parent if self._source else Path.cwd()

    def resolve_path(self, relative: str) -> Path:
        """A path written in the charter, resolved against the charter file's folder."""
        p = Path(relative).expanduser()
        return p if p.is_absolute() else (self.base_dir / p)

    @property
    def doc_path(self) -> Path:
        return self.resolve_path(self.outputs.doc)

    def selector_for(self, host: str | None) -> str | None:
        """The CSS selector configured for ``host`` (most specific domain wins), if any."""
        if not host:
            return None
        host = host.lower()
        best: tuple[int, str] | None = None
        for domain, selector in self.harvest.selectors.items():
            d = domain.lower()
            if host == d or host.endswith("." + d):
                if best is None or len(d) > best[0]:
                    best = (len(d), selector)
        return best[1] if best else None

    def egress(self) -> EgressPolicy:
        """This charter's egress policy (its allowlist and the settings' resolver rules): build it once per run
        and hand it over."""
        return EgressPolicy.for_run(self.allowed_domains)

    def allows(self, url: str) -> bool:
        """Whether ``url`` is on the allowlist (the Python API's shorthand; brt's own code asks the policy)."""
        return EgressPolicy.of(self.allowed_domains).permits(url)


class _FieldError(BrtException, ValueError):
    """A validation error raised from a model validator that knows its exact field path."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def _format_loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc)


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for e in error.errors():
        ctx_err = (e.get("ctx") or {}).get("error")
        if isinstance(ctx_err, _FieldError):
            problems.append((ctx_err.field, ctx_err.message))
            continue
        field = _format_loc(e["loc"])
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not in the charter schema; check the spelling)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        problems.append((field, msg))
    return problems


def parse_charter(data: Any, *, source: str | Path = "<charter>") -> Charter:
    """Validate already-parsed charter data (a mapping)."""
    path = str(source)
    if not isinstance(data, dict):
        raise CharterError(path, [("", f"expected a mapping at the top level, got {type(data).__name__}")])
    try:
        charter = Charter.model_validate(data)
    except ValidationError as exc:
        raise CharterError(path, _problems(exc)) from None
    if isinstance(source, Path):
        charter._source = source.resolve()
    return charter


def load_charter(path: str | Path) -> Charter:
    """Load and validate a charter from a YAML (.yaml/.yml) or JSON (.json) file: a regular file of at most
    MAX_CHARTER_BYTES, read without blocking (a FIFO or a device is refused at once)."""
    from .files import FileRefused, read_regular

    p = Path(path)
    try:
        raw = read_regular(p, limit=MAX_CHARTER_BYTES, what="charter").decode("utf-8")
    except FileNotFoundError:
        raise CharterError(str(p), [("", "file not found")]) from None
    except FileRefused as exc:
        raise CharterError(str(p), [("", str(exc))]) from None
    except OSError as exc:
        raise CharterError(str(p), [("", f"cannot read: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError:
        raise CharterError(str(p), [("", "not UTF-8 text")]) from None
    from .charter_syntax import CharterSyntaxError, check_json, check_yaml  # duplicates, depth

    if p.suffix.lower() == ".json":
        try:
            check_json(raw)
            data = json.loads(raw)
        except CharterSyntaxError as exc:
            raise CharterError(str(p), [(exc.field, str(exc))]) from None
        except json.JSONDecodeError as exc:
            raise CharterError(
                str(p), [("", f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")]
            ) from None
        except RecursionError:
            raise CharterError(str(p), [("", "nested too deeply")]) from None
    else:
        import yaml

        try:
            check_yaml(raw)
            data = yaml.load(raw, Loader=_loader())  # noqa: S506 - a SafeLoader that refuses duplicate keys
        except CharterSyntaxError as exc:
            raise CharterError(str(p), [(exc.field, str(exc))]) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise CharterError(str(p), [("", f"malformed YAML{where}: {problem}")]) from None
        except RecursionError:
            raise CharterError(str(p), [("", "nested too deeply")]) from None
    try:
        return parse_charter(data, source=p)
    except RecursionError:
        raise CharterError(str(p), [("", "nested too deeply")]) from None


def _loader() -> Any:
    from .charter_syntax import yaml_loader

    return yaml_loader()


def charter_json_schema() -> dict[str, Any]:
    """The JSON Schema of a charter file."""
    schema = Charter.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "brt task charter"
    return schema
