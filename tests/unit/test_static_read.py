"""What a page read without the browser (``orchestrator/harvest/static.py``) is made of, without a browser: the
document as the HAR keeps it, a replay HAR read back with every redirect hop checked, and the render record of
the snapshot's page records."""

from __future__ import annotations

import base64
import json

from orchestrator.charter import url_allowed
from orchestrator.harvest.har import ReplayIndex, har_document_entry, har_redirect_entry
from orchestrator.harvest.journal import render_of_pages
from orchestrator.harvest.net.fetcher import FetchResult
from orchestrator.harvest.static import replay_fetch

BODY = "<!DOCTYPE html><html><head><title>Quay</title></head><body><p>Café at the quay.</p></body></html>".encode()


def _result(url: str, status: int = 200, body: bytes = BODY) -> FetchResult:
    return FetchResult(
        kind="ok", url=url, status=status, status_text="OK",
        headers=[("Content-Type", "text/html; charset=utf-8"), ("Last-Modified", "Wed, 02 Oct 2024 10:00:00 GMT")],
        body=body, hops=[url],
    )


def _har(tmp_path, entries):
    path = tmp_path / "replay.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    return ReplayIndex(path)


def test_a_documents_har_entry_is_the_body_as_served_and_replays(tmp_path):
    entry = har_document_entry("GET", _result("https://quay.test/a"))
    assert entry["request"]["url"] == "https://quay.test/a" and entry["response"]["status"] == 200
    assert base64.b64decode(entry["response"]["content"]["text"]) == BODY
    index = _har(tmp_path, [entry])
    assert index.documents["https://quay.test/a"][1] == BODY and index.body("https://quay.test/a") == BODY
    got = replay_fetch(index, "https://quay.test/a", lambda u: url_allowed(u, ["quay.test"]))
    assert got is not None and got.body == BODY and got.status == 200 and got.content_type == "text/html"
    assert dict(got.headers)["Last-Modified"].startswith("Wed")


def test_a_replayed_redirect_is_checked_hop_by_hop(tmp_path):
    allowed = ["quay.test"]
    first = _result("https://quay.test/old")
    entries = [
        har_redirect_entry("GET", "https://quay.test/old", first, "https://quay.test/new"),
        har_document_entry("GET", _result("https://quay.test/new")),
        har_redirect_entry("GET", "https://quay.test/away", first, "https://elsewhere.test/page"),
        har_document_entry("GET", _result("https://elsewhere.test/page")),
        har_document_entry("GET", _result("https://quay.test/gone", status=404, body=b"<p>not found</p>")),
    ]
    index = _har(tmp_path, entries)
    check = lambda u: url_allowed(u, allowed)  # noqa: E731
    moved = replay_fetch(index, "https://quay.test/old", check)
    assert moved is not None and moved.url == "https://quay.test/new" and moved.hops == [
        "https://quay.test/old", "https://quay.test/new"
    ]
    assert replay_fetch(index, "https://quay.test/away", check) is None  # the browser path refuses, and says why
    assert replay_fetch(index, "https://quay.test/missing", check) is None  # not in the HAR: the browser path
    gone = replay_fetch(index, "https://quay.test/gone", check)
    assert gone is not None and gone.status == 404  # settled as "HTTP 404", as a rendered page would be


def test_page_records_take_the_render_of_the_newest_event_that_stored_them():
    events = [
        {"type": "harvest_event", "url": "https://q.test/a", "final_url": "https://q.test/a", "outcome": "stored",
         "render": "always", "rendered": True},
        {"type": "harvest_event", "url": "https://q.test/a", "final_url": "https://q.test/a", "outcome": "stored",
         "render": "auto", "rendered": False},
        {"type": "harvest_event", "url": "https://q.test/b", "final_url": "https://q.test/b2", "outcome": "stored",
         "render": "auto", "rendered": True},
        {"type": "harvest_event", "url": "https://q.test/c", "outcome": "failed", "render": "auto", "rendered": False},
        {"type": "harvest_event", "url": "https://q.test/d", "outcome": "stored"},  # stored before the setting
    ]
    got = render_of_pages(events)
    assert got["https://q.test/a"] == {"render": "auto", "rendered": False}
    assert got["https://q.test/b2"] == got["https://q.test/b"] == {"render": "auto", "rendered": True}
    assert "https://q.test/c" not in got and "https://q.test/d" not in got
