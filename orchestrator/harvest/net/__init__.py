"""The harvest's network rules: ``fetcher`` (documents fetched by brt itself, hop by hop, byte cap, deadline),
``guard`` (no internal addresses: SSRF), ``urls`` (canonical form, the allowlist filter for links), ``politeness``
(per-host concurrency and delay, backoff and retries, robots.txt)."""
