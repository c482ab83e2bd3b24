"""The egress policy (``orchestrator.egress``): one object per run, the allowlist's rules unchanged."""

from __future__ import annotations

import pytest

from orchestrator.egress import EgressPolicy


def test_a_charter_policy_allows_its_domains_and_their_subdomains_only():
    policy = EgressPolicy.of(["web.dev", "127.0.0.1", "localhost"])
    assert policy.permits("https://web.dev/a") and policy.permits("http://x.y.web.dev:8080/b")
    assert not policy.permits("https://notweb.dev/") and not policy.permits("https://web.dev.evil.com/")
    assert policy.permits("http://127.0.0.1:9/") and not policy.permits("http://a.localhost/")
    assert not policy.permits("ftp://web.dev/x") and not policy.permits("https://user:pw@web.dev/")
    assert policy.permits_host("x.web.dev") and not policy.permits_host(None)
    assert policy.exact("127.0.0.1") and policy.exact("WEB.DEV.") and not policy.exact("x.web.dev")


def test_without_a_charter_any_public_web_url_and_no_exact_host():
    policy = EgressPolicy.of(None)
    assert policy.permits("https://anything.example/") and not policy.permits("file:///etc/passwd")
    assert policy.exact_hosts == [] and not policy.exact("127.0.0.1") and policy.devtools_patterns() == []


def test_the_run_policy_takes_the_resolver_rules_of_the_settings(monkeypatch):
    monkeypatch.setenv("BRT_HOST_RESOLVER_RULES", "MAP a.test 127.0.0.1")
    policy = EgressPolicy.for_run(["a.test"])
    assert policy.resolver_rules == "MAP a.test 127.0.0.1" and policy.exact_hosts == ["a.test"]
    monkeypatch.delenv("BRT_HOST_RESOLVER_RULES")
    assert EgressPolicy.for_run(["a.test"]).resolver_rules is None


def test_allowlist_items_are_parsed_here():
    assert EgressPolicy.parse_domains([" Web.Dev. ", "[::1]", "10.0.0.5"]) == ["web.dev", "::1", "10.0.0.5"]
    with pytest.raises(ValueError, match="not a URL"):
        EgressPolicy.parse_domains(["https://web.dev"])
    with pytest.raises(ValueError, match="not a valid host name"):
        EgressPolicy.parse_domains(["bad domain"])
    assert EgressPolicy.of(["web.dev", "127.0.0.1"]).devtools_patterns() == [
        "http://web.dev:*/*", "http://*.web.dev:*/*", "https://web.dev:*/*", "https://*.web.dev:*/*",
        "http://127.0.0.1:*/*", "https://127.0.0.1:*/*",
    ]
