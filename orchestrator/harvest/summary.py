"""The summary of a harvest (after every harvest and in ``brt status``): stored; skipped, blocked and failed by
reason; retried URLs and retries; bytes; time."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

__all__ = ["format_summary", "summarize"]


def _reason_key(reason: str | None) -> str:
    """A reason without its URL-specific tail, for grouping ("HTTP 503", "blocked by robots.txt", ...)."""
    text = (reason or "unknown").strip()
    text = re.sub(r"https?://\S+", "", text)
    text = re.sub(r"\(\d+ bytes[^)]*\)", "", text)
    text = re.sub(r"internal address \((\S+) [^)]*\)", r"internal address (\1)", text)
    return text.rstrip(" :").strip() or "unknown"


def summarize(events: list[dict[str, Any]], elapsed_s: float) -> dict[str, Any]:
    """Counts of one harvest: stored, skipped/blocked/failed by reason, retried URLs and retries, bytes, time."""
    by: dict[str, Counter[str]] = {"skipped": Counter(), "blocked": Counter(), "failed": Counter()}
    stored = retried = retries = byte_total = 0
    aborted: Counter[str] = Counter()
    for e in events:
        if e.get("type", "harvest_event") != "harvest_event":
            continue
        outcome = e.get("outcome")
        if outcome == "stored":
            stored += 1
        elif outcome in by:
            by[outcome][_reason_key(e.get("reason"))] += 1
        n = len(e.get("attempts") or [])
        if n > 1:
            retried += 1
            retries += n - 1
        byte_total += int(e.get("bytes") or 0)
        aborted.update(e.get("aborted_requests") or {})
    return {
        "stored": stored,
        "skipped": dict(by["skipped"]),
        "blocked": dict(by["blocked"]),
        "failed": dict(by["failed"]),
        "retried_urls": retried,
        "retries": retries,
        "bytes": byte_total,
        "aborted_requests": dict(sorted(aborted.items())),  # text mode: subresources never requested, per type
        "elapsed_s": round(float(elapsed_s or 0.0), 3),
    }


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a small text table."""
    rows: list[tuple[str, str]] = [("stored", str(summary.get("stored", 0)))]
    for outcome in ("skipped", "blocked", "failed"):
        reasons = summary.get(outcome) or {}
        rows.append((outcome, str(sum(reasons.values()))))
        for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            rows.append((f"  {reason}", str(n)))
    rows.append(("retried", f"{summary.get('retried_urls', 0)} URLs, {summary.get('retries', 0)} retries"))
    rows.append(("bytes", _human_bytes(int(summary.get("bytes") or 0))))
    aborted = summary.get("aborted_requests") or {}
    if aborted:
        kinds = ", ".join(f"{n} {kind}" for kind, n in aborted.items())
        rows.append(("text mode", f"{sum(aborted.values())} requests aborted ({kinds})"))
    rows.append(("time", f"{float(summary.get('elapsed_s') or 0):.1f}s"))
    if summary.get("stopped"):
        rows.append(("stopped", str(summary["stopped"])))
    egress = summary.get("egress")
    if isinstance(egress, dict):
        rows.append(("egress", _egress_row(egress)))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def _egress_row(egress: dict[str, Any]) -> str:
    refused = f"{int(egress.get('refused') or 0)} connections refused"
    if not egress.get("enforced"):
        return f"NOT ENFORCED ({egress.get('note') or 'a browser brt did not launch'}); {refused}"
    how = "everything refused (replay)" if egress.get("by") == "replay" else "through brt's egress proxy"
    return f"enforced, {how}; {refused}"


def _human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"
