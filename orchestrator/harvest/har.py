"""Everything HAR: where a harvest records its browser contexts (one HAR per context), the placeholder that marks
a recording a crash cut short (``log.comment`` starting ``incomplete:``), refused redirects added to a recording,
the maps a replay routes by, the index of a replay HAR's bodies (for ``--refresh``), the merge ``brt clean``
writes beside the snapshot, and the provenance of each stored page.

**Provenance** (``log._brt_provenance``, a HAR custom field): when a harvest ends, each page it stored gets one
record in its HAR: the URL, the sha256 of the document body the server sent (the body is in the same HAR), the
sha256 of the text brt extracted from it, the page's chunk ids (each the hash of its chunk's text), its title and
its last-updated date. That is a hash chain body -> text -> chunks written beside what the server served, so
``brt verify`` with the genuine HAR catches a snapshot whose text, chunks, dates or citations were edited and
resealed (``audit/verify.py``).

A page an agent adds with ``add_page`` (no server response: the agent read it) gets a provenance record too, with
``origin: "add_page"`` and no body hash, in a HAR of its own in the store (``record_added_page``): the HAR is the
record of everything that entered the store, so ``verify`` requires a provenance record for every page and says
which pages no server response proves, whatever the snapshot's own records claim about them."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_store.clock import file_stamp, now

from .. import __version__, url_safety
from ..errors import HarvestError

if TYPE_CHECKING:
    from memory_store import Memory

__all__ = [
    "INCOMPLETE",
    "ReplayIndex",
    "add_har_entries",
    "fingerprint_headers",
    "har_document_entry",
    "har_entry",
    "har_error_urls",
    "har_files",
    "har_name",
    "har_path_for",
    "har_redirects",
    "har_urls",
    "PROVENANCE",
    "add_provenance",
    "content_bytes",
    "mark_incomplete",
    "merge_hars",
    "provenance_record",
    "added_page_record",
    "merged_har",
    "read_har",
    "record_added_page",
    "sha256_hex",
]

logger = logging.getLogger(__name__)


def har_path_for(store_dir: Path) -> Path:
    """``<store>/har/<UTC timestamp>.har``."""
    return Path(store_dir) / "har" / har_name()


def har_name() -> str:
    return file_stamp(micro=True) + ".har"


INCOMPLETE = "incomplete:"


def read_har(har: Path, *, follow_symlinks: bool = True) -> dict[str, Any]:
    """brt's one HAR reader: the HAR at ``har`` (a regular file holding a JSON object with a ``log`` object);
    ValueError otherwise (FileNotFoundError when missing). ``follow_symlinks=False`` for a HAR nobody named (the
    one beside a snapshot): a symlink there is refused."""
    from ..files import FileRefused, open_regular

    try:
        with open_regular(har, what="HAR", follow_symlinks=follow_symlinks) as fh:
            data = json.load(fh)
    except FileRefused as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("log"), dict):
        raise ValueError("not a HAR (no log object)")
    return data


def mark_incomplete(har: Path, reason: str, pages: list[str], *, lost: bool) -> None:
    """Say in the HAR's ``log.comment`` that its recording was cut short; write a placeholder when ``lost``."""
    note = (
        f"{INCOMPLETE} {reason} at {now()}; "
        + ("Playwright could not save this context's recording" if lost else "requests in flight are missing")
        + (f"; pages read in it: {' '.join(pages)}" if pages else "")
    )
    data: dict[str, Any] | None = None
    if not lost:
        try:
            data = read_har(har)
            data["log"]["comment"] = (str(data["log"].get("comment") or "") + " " + note).strip()
        except (OSError, ValueError, KeyError, TypeError):
            data = None
    if data is None:
        data = empty_har(note)
    tmp = har.with_suffix(".har.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(har)


def _replay_entries(har: Path) -> list[Any]:
    """The entries of a replay HAR file (a clear error when it cannot be read)."""
    try:
        entries = read_har(har)["log"]["entries"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HarvestError(f"cannot read the replay HAR {har}: {exc}") from exc
    return entries if isinstance(entries, list) else []


def har_urls(har: Path, *, errors_only: bool = False) -> set[str]:
    """Every request URL of a HAR file, without fragment (``errors_only``: those answered with 4xx/5xx)."""
    urls: set[str] = set()
    for entry in _replay_entries(har):
        try:
            if not errors_only or int(entry["response"].get("status") or 0) >= 400:
                urls.add(str(entry["request"]["url"]).split("#", 1)[0])
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return urls


def har_error_urls(har: Path) -> set[str]:
    """The request URLs (without fragment) a HAR file answers with an error status (4xx/5xx)."""
    return har_urls(har, errors_only=True)


def har_redirects(har: Path) -> dict[str, list[str]]:
    """Request URL -> the absolute redirect targets of its 3xx entries in a HAR file (every one: when a URL has
    several entries, Playwright's HAR router picks one by the request's headers)."""
    redirects: dict[str, list[str]] = {}
    for entry in _replay_entries(har):
        try:
            url = entry["request"]["url"]
            response = entry["response"]
            status = int(response.get("status") or 0)
        except (KeyError, TypeError, ValueError):
            continue
        if not 300 <= status < 400:
            continue
        location = response.get("redirectURL") or next(
            (
                h.get("value")
                for h in response.get("headers", [])
                if str(h.get("name", "")).lower() == "location"
            ),
            None,
        )
        if location:
            target = url_safety.join(url, location) or location
            if target not in redirects.setdefault(url, []):
                redirects[url].append(target)
    return redirects


def har_redirect_entry(method: str, url: str, result: Any, target: str) -> dict[str, Any]:
    """The redirect the browser was spared, for the HAR: a replay meets ``url`` -> ``target`` as a 302."""
    entry = har_entry(method, url, result, target)
    entry["response"].update(
        status=302,
        statusText="Found",
        headers=[{"name": "Location", "value": target}],
        content={"size": 0, "mimeType": "text/html", "text": ""},
    )
    return entry


def har_entry(method: str, url: str, response: Any, target: str) -> dict[str, Any]:
    """Keep the refused redirect for the HAR (the browser never saw it, so Playwright does not record it): a
    replay of the HAR then meets the same redirect and refuses it the same way."""
    return {
        "startedDateTime": now("microseconds"),
        "time": 0,
        "request": {
            "method": method,
            "url": url,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [],
            "queryString": [],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": response.status,
            "statusText": response.status_text or "",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": k, "value": v} for k, v in response.headers],
            "content": {"size": 0, "mimeType": response.header("content-type") or "text/html", "text": ""},
            "redirectURL": target,
            "headersSize": -1,
            "bodySize": 0,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
    }


def har_document_entry(method: str, response: Any) -> dict[str, Any]:
    """A document brt fetched itself and read without the browser (``static.py``), as the HAR keeps it: its
    final URL, status, headers and the body exactly as served (base64), so a replay serves the same document and
    ``brt verify`` finds the body the page's text was extracted from. ``response`` is a ``FetchResult``."""
    entry = har_entry(method, response.url, response, "")
    body = bytes(response.body or b"")
    entry["response"]["content"] = {
        "size": len(body),
        "mimeType": response.header("content-type") or "text/html",
        "text": base64.b64encode(body).decode("ascii"),
        "encoding": "base64",
    }
    entry["response"]["bodySize"] = len(body)
    entry["time"] = round(float(getattr(response, "elapsed_s", 0.0) or 0.0) * 1000, 3)
    return entry


def empty_har(comment: str | None = None) -> dict[str, Any]:
    """A HAR 1.2 log with no entries, written by brt (not by the browser)."""
    log: dict[str, Any] = {"version": "1.2", "creator": {"name": "brt", "version": __version__}, "pages": [],
                           "entries": []}
    if comment:
        log["comment"] = comment
    return {"log": log}


def add_har_entries(har_path: Any, entries: list[dict[str, Any]], *, create: bool = False) -> None:
    """Add ``entries`` to the HAR file (replacing recorded entries of the same URL that have no response);
    ``create``: a file that does not exist yet is started (a harvest whose browser never started records only
    the documents brt read itself)."""
    if not entries:
        return
    path = Path(har_path)
    try:
        if create and not path.exists():
            har = empty_har()
        else:
            har = read_har(path)
        log = har["log"]
    except (OSError, ValueError, KeyError) as exc:
        logger.warning("cannot add brt's own entries (documents, refused redirects) to %s: %s", path, exc)
        return
    urls = {e["request"]["url"] for e in entries}
    kept = [
        e
        for e in log.get("entries", [])
        if not (e.get("request", {}).get("url") in urls and int(e.get("response", {}).get("status") or 0) <= 0)
    ]
    log["entries"] = kept + entries
    tmp = path.with_suffix(".har.tmp")
    try:
        tmp.write_text(json.dumps(har), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:  # e.g. a full disk (limits.py): the HAR keeps what Playwright wrote
        logger.warning("cannot add brt's own entries (documents, refused redirects) to %s: %s", path, exc)
        tmp.unlink(missing_ok=True)


def har_files(memory: Memory) -> list[Path]:
    """The HAR archives the store's harvests recorded, oldest first."""
    folder = memory.path / "har"
    return sorted(folder.glob("*.har")) if folder.is_dir() else []


def merged_har(hars: list[Path]) -> dict[str, Any] | None:
    """One HAR (as data) holding every entry of ``hars``; the newest harvest's entries and provenance records
    come first, so a replay serves what was read last. The ``log.comment`` of each (e.g. "incomplete: browser
    crashed ...", written when a crash cut a recording short) is kept, one per line. None when none is
    readable."""
    merged: dict[str, Any] | None = None
    entries: list[Any] = []
    pages: list[Any] = []
    provenance: list[Any] = []
    comments: list[str] = []
    for har in reversed(hars):
        if har.is_symlink():  # the store's own recordings only: a link planted there is not followed
            logger.warning("skipping %s: a symlink, not a recording of this store", har)
            continue
        try:
            data = read_har(har)
        except (OSError, ValueError) as exc:
            logger.warning("skipping unreadable HAR %s: %s", har, exc)
            continue
        body = data.get("log", {})
        if merged is None:
            merged = data
        entries.extend(body.get("entries", []))
        pages.extend(body.get("pages", []))
        provenance.extend(body.get(PROVENANCE) or [])
        if body.get("comment"):
            comments.append(f"{har.name}: {body['comment']}")
    if merged is None:
        return None
    merged["log"]["entries"] = entries
    merged["log"]["pages"] = pages
    if provenance:
        merged["log"][PROVENANCE] = provenance  # newest harvest first, like the entries
    else:
        merged["log"].pop(PROVENANCE, None)
    if comments:
        merged["log"]["comment"] = "\n".join(comments)
    else:
        merged["log"].pop("comment", None)
    return merged


def merge_hars(hars: list[Path], dest: Path) -> Path | None:
    """Write :func:`merged_har` of ``hars`` to ``dest`` (None when there is nothing to write)."""
    merged = merged_har(hars)
    if merged is None:
        return None
    incomplete = [c for c in str(merged["log"].get("comment") or "").splitlines() if "incomplete:" in c]
    if incomplete:
        logger.warning("the merged HAR %s is incomplete: %s", dest, "; ".join(incomplete))
    from ..files import write_file

    write_file(dest, json.dumps(merged))  # a link planted at dest is replaced, never followed
    return dest


def content_bytes(content: dict[str, Any]) -> bytes:
    """The body of a HAR entry's ``response.content`` (base64 or text)."""
    text = content.get("text") or ""
    return base64.b64decode(text) if content.get("encoding") == "base64" else str(text).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: The HAR ``log`` field that holds the provenance of the pages a harvest stored (see the module docstring).
PROVENANCE = "_brt_provenance"


def provenance_record(page: Any, event: dict[str, Any]) -> dict[str, Any]:
    """The provenance of a stored page (a ``PageRecord``) and the harvest event that stored it."""
    fingerprint = event.get("fingerprint") if isinstance(event.get("fingerprint"), dict) else {}
    return {
        "url": page.url,
        "origin": "harvest",
        "requested_url": event.get("url"),
        "doc_sha256": fingerprint.get("doc"),
        **_page_hashes(page),
    }


def added_page_record(page: Any, requested_url: str | None) -> dict[str, Any]:
    """The provenance of a page an agent added with ``add_page`` (a ``PageRecord``): no server response, so no
    body hash; the text, chunks, title and dates as stored."""
    return {"url": page.url, "origin": "add_page", "requested_url": requested_url, "doc_sha256": None,
            **_page_hashes(page)}


def _page_hashes(page: Any) -> dict[str, Any]:
    return {
        "text_sha256": sha256_hex(page.text.encode("utf-8")),
        "chunk_ids": list(page.chunk_ids),
        "title": page.title,
        "last_updated": page.last_updated,
        "last_updated_source": page.last_updated_source,
        "stored_at": page.stored_at,
        "recorded_at": now("microseconds"),
    }


def record_added_page(store_dir: Path, record: dict[str, Any]) -> Path:
    """A HAR of its own in the store's ``har/`` folder holding the provenance ``record`` of a page added with
    ``add_page`` (no entries: nothing was fetched). Named like a harvest's HAR, so that the merge ``brt clean``
    writes keeps the newest record of a URL first."""
    from ..files import write_file

    data = {"log": {"version": "1.2", "creator": {"name": "brt", "version": __version__}, "pages": [],
                    "entries": [], PROVENANCE: [record]}}
    return write_file(har_path_for(Path(store_dir)), json.dumps(data))


def add_provenance(har_path: Path, records: list[dict[str, Any]]) -> None:
    """Add ``records`` (see :func:`provenance_record`) to the HAR's ``log._brt_provenance``. A HAR that cannot be
    read or written is logged and left as it is (``verify`` then says the pages have no provenance)."""
    if not records:
        return
    path = Path(har_path)
    try:
        har = read_har(path)
        log = har["log"]
        log[PROVENANCE] = [*records, *(log.get(PROVENANCE) or [])]
        tmp = path.with_suffix(".har.tmp")
        tmp.write_text(json.dumps(har), encoding="utf-8")
        tmp.replace(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("cannot record the stored pages' provenance in %s: %s", path, exc)


def fingerprint_headers(headers: dict[str, str]) -> dict[str, str]:
    """The response headers that shape the stored record (content type, Last-Modified for last_updated) or
    what the page's scripts may do (Content-Security-Policy)."""
    out = {}
    for key in ("content-type", "last-modified", "content-security-policy"):
        for name, value in headers.items():
            if name.lower() == key:
                out[key] = value
    return out


class ReplayIndex:
    """The replay HAR's responses by URL (the first entry of a URL, as Playwright's HAR router serves it),
    hashed, with recorded redirects followed. The HTML documents' bodies and headers are kept (what a page read
    without the browser is read from: ``static.py``); other bodies are read from the file again when asked."""

    def __init__(self, har: Path):
        self.har = Path(har)
        self.entries: dict[str, tuple[int, str, dict[str, str], str | None]] = {}
        self.documents: dict[str, tuple[list[tuple[str, str]], bytes]] = {}  # HTML: (headers, body)
        data = read_har(Path(har))
        for entry in data["log"].get("entries", []):
            try:
                self._add(entry)
            except (KeyError, TypeError, ValueError) as exc:
                logger.debug("replay index: skipping an entry: %s", exc)

    def _add(self, entry: dict[str, Any]) -> None:
        request, response = entry["request"], entry["response"]
        url = str(request["url"]).split("#", 1)[0]
        if url in self.entries or request.get("method", "GET") != "GET":
            return
        status = int(response.get("status") or 0)
        pairs = [(str(h["name"]), str(h["value"])) for h in response.get("headers", [])]
        headers = {name.lower(): value for name, value in pairs}
        body = content_bytes(response.get("content") or {})
        location = response.get("redirectURL") or headers.get("location")
        # the browser's reading of the Location (WHATWG: "/\\evil.example" is another host, as in har_redirects)
        target = (url_safety.join(url, location) or location) if 300 <= status < 400 and location else None
        self.entries[url] = (status, sha256_hex(body), fingerprint_headers(headers), target)
        ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if target is None and ctype in ("text/html", "application/xhtml+xml"):
            self.documents[url] = (pairs, body)

    def body(self, url: str) -> bytes | None:
        """The body the HAR holds for ``url`` itself (a document's from memory, others read from the file)."""
        key = url.split("#", 1)[0]
        if key not in self.entries or self.entries[key][3] is not None:
            return None
        if key in self.documents:
            return self.documents[key][1]
        data = read_har(self.har)
        for entry in data["log"].get("entries", []):
            try:
                if str(entry["request"]["url"]).split("#", 1)[0] != key:
                    continue
                return content_bytes(entry["response"].get("content") or {})
            except (KeyError, TypeError, ValueError):
                continue
        return None

    def sha(self, url: str) -> str | None:
        """The sha256 of the body the HAR holds for ``url`` itself (no redirect followed)."""
        entry = self.entries.get(url.split("#", 1)[0])
        return entry[1] if entry is not None and entry[3] is None else None

    async def get(self, url: str, deadline: float) -> tuple[int | None, str, dict[str, str], str] | None:
        current = url.split("#", 1)[0]
        for _ in range(11):
            if time.monotonic() > deadline:
                return None
            entry = self.entries.get(current)
            if entry is None:
                return None
            status, sha, meta, target = entry
            if target is None:
                return status, sha, meta, current
            current = target.split("#", 1)[0]
        return None
