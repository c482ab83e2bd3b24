"""Charter validation: YAML and JSON, exit 2 naming the field for each kind of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from orchestrator.charter import charter_json_schema, host_allowed, load_charter, url_allowed
from orchestrator.cli import cli
from orchestrator.errors import CharterError

GOOD = """\
id: test_charter
title: Test
allowed_domains: [web.dev, 127.0.0.1]
seeds: [https://web.dev/articles/vitals]
outputs:
  doc: out/report.md
  sections:
    - title: CLS mitigation
      label: CLS
"""


def write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_valid_yaml_and_json(tmp_path):
    c = load_charter(write(tmp_path, GOOD))
    assert c.id == "test_charter"
    assert c.outputs.sections[0].effective_label == "CLS"
    assert c.outputs.sections[0].effective_question == "CLS mitigation"
    assert c.doc_path == (tmp_path / "out/report.md").resolve()
    j = write(
        tmp_path,
        json.dumps({"id": "j", "title": "J", "allowed_domains": ["a.org"], "seeds": ["http://a.org/"]}),
        "c.json",
    )
    assert load_charter(j).harvest.max_pages == 50


@pytest.mark.parametrize(
    "text, field",
    [
        (GOOD + "colour: red\n", "colour"),
        (GOOD.replace("id: test_charter", "id: ../x"), "id"),
        (
            GOOD.replace("seeds: [https://web.dev/articles/vitals]", "seeds: [https://evil.example/x]"),
            "seeds.0",
        ),
        (GOOD.replace("allowed_domains: [web.dev, 127.0.0.1]", "allowed_domains: []"), "allowed_domains"),
        (GOOD + "harvest:\n  max_pagez: 3\n", "harvest.max_pagez"),
        (GOOD.replace("title: Test\n", ""), "title"),
    ],
)
def test_invalid_charter_names_the_field(tmp_path, text, field):
    p = write(tmp_path, text)
    with pytest.raises(CharterError) as info:
        load_charter(p)
    assert field in [f for f, _ in info.value.problems]
    result = CliRunner().invoke(cli, ["charter", "validate", str(p)])
    assert result.exit_code == 2
    assert f"{p}: {field}:" in result.output


def test_malformed_yaml_is_exit_2_with_position(tmp_path):
    p = write(tmp_path, "id: x\ntitle: [unclosed\n")
    result = CliRunner().invoke(cli, ["charter", "validate", str(p)])
    assert result.exit_code == 2
    assert "malformed YAML" in result.output and "line" in result.output


def test_real_entry_point_exit_codes(tmp_path):
    good, bad = write(tmp_path, GOOD), write(tmp_path, GOOD + "oops: 1\n", "bad.yaml")
    ok = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "charter", "validate", str(good)],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    fail = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "charter", "validate", str(bad)],
        capture_output=True,
        text=True,
    )
    assert fail.returncode == 2 and "oops" in fail.stderr


def test_schema_is_json_schema():
    result = CliRunner().invoke(cli, ["charter", "schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert set(schema["required"]) >= {"id", "title", "allowed_domains", "seeds"}
    assert schema["additionalProperties"] is False


def test_allowlist_semantics():
    assert host_allowed("web.dev", ["web.dev"]) and host_allowed("x.y.web.dev", ["web.dev"])
    assert not host_allowed("notweb.dev", ["web.dev"])
    assert not host_allowed("web.dev.evil.com", ["web.dev"])
    assert host_allowed("127.0.0.1", ["127.0.0.1"]) and not host_allowed("localhost", ["127.0.0.1"])
    assert not host_allowed("a.localhost", ["localhost"])
    assert not url_allowed("file:///etc/passwd", ["web.dev"])
    assert not url_allowed("ftp://web.dev/x", ["web.dev"])


def test_help_does_not_import_heavy_libraries():
    code = (
        "import sys; from orchestrator.cli import cli; "
        "import click.testing as t; t.CliRunner().invoke(cli, ['--help']); "
        "heavy = ('torch', 'lancedb', 'playwright', 'FlagEmbedding', 'trafilatura', 'ray'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "print(heavy); assert not heavy"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_text_mode_block_resources(tmp_path):
    """harvest.block_resources: images, media and fonts by default; [] turns text mode off; anything that is
    not a blockable subresource type (documents, scripts) or a repeat is refused, naming the field."""
    c = load_charter(write(tmp_path, GOOD))
    assert c.harvest.block_resources == ["image", "media", "font"]
    off = load_charter(write(tmp_path, GOOD + "harvest:\n  block_resources: []\n", "off.yaml"))
    assert off.harvest.block_resources == []
    more = load_charter(write(tmp_path, GOOD + "harvest:\n  block_resources: [image, stylesheet]\n", "more.yaml"))
    assert more.harvest.block_resources == ["image", "stylesheet"]
    for bad in ("[script]", "[document]", "[image, image]", "image"):
        with pytest.raises(CharterError) as err:
            load_charter(write(tmp_path, GOOD + f"harvest:\n  block_resources: {bad}\n", "bad.yaml"))
        assert "harvest.block_resources" in str(err.value), str(err.value)


def test_render_setting(tmp_path):
    """harvest.render: auto by default, always or never; anything else is refused, naming the field and the
    values it takes."""
    assert load_charter(write(tmp_path, GOOD)).harvest.render == "auto"
    for value in ("always", "never", "auto"):
        c = load_charter(write(tmp_path, GOOD + f"harvest:\n  render: {value}\n", f"{value}.yaml"))
        assert c.harvest.render == value
    for bad in ("sometimes", "true", "[auto]", "ALWAYS"):
        with pytest.raises(CharterError) as err:
            load_charter(write(tmp_path, GOOD + f"harvest:\n  render: {bad}\n", "bad.yaml"))
        assert "harvest.render" in str(err.value) and "always" in str(err.value), str(err.value)


def test_harvest_engine_and_ray_options(tmp_path):
    """harvest.engine (local | ray) and harvest.ray (workers, tabs, embedders): defaults, and a bad value refused
    naming the field; a Ray address in a charter is refused naming harvest.ray.address (issue 41: only the
    operator chooses where brt connects); the CLI refuses a bad --ray address and --ray with --replay before
    anything runs (exit 2 / a clear error), and Ray is not imported for it."""
    c = load_charter(write(tmp_path, GOOD))
    assert c.harvest.engine == "local" and c.harvest.ray.address is None and c.harvest.ray.workers == 2
    ray = load_charter(write(tmp_path, GOOD + "harvest:\n  engine: ray\n  ray: {workers: 4}\n", "r.yaml"))
    assert ray.harvest.engine == "ray" and ray.harvest.ray.address is None
    assert ray.harvest.ray.workers == 4 and ray.harvest.ray.embedders == 1
    for bad, field in (
        ("engine: spark", "harvest.engine"),
        ("engine: ray\n  ray: {address: 'http://head:8265'}", "harvest.ray.address"),
        ("engine: ray\n  ray: {address: 'ray://10.0.0.5:10001'}", "harvest.ray.address"),
        ("ray: {address: auto}", "harvest.ray.address"),
        ("ray: {address: local}", "harvest.ray.address"),
        ("ray: {workers: 0}", "harvest.ray.workers"),
        ("ray: {nodes: 3}", "harvest.ray.nodes"),
    ):
        with pytest.raises(CharterError) as err:
            load_charter(write(tmp_path, GOOD + f"harvest:\n  {bad}\n", "bad.yaml"))
        assert field in str(err.value), str(err.value)
        if "address" in bad:
            assert "operator" in str(err.value) and "BRT_RAY_ADDRESS" in str(err.value), str(err.value)
    assert "address" not in json.dumps(charter_json_schema()["$defs"]["RayOptions"]["properties"])
    path = write(tmp_path, GOOD, "ok.yaml")
    code = (
        "import sys; from click.testing import CliRunner; from orchestrator.cli import cli; "
        f"r = CliRunner().invoke(cli, ['harvest', {str(path)!r}, '--ray', 'http://x']); print(r.output); "
        f"r2 = CliRunner().invoke(cli, ['harvest', {str(path)!r}, '--replay', {str(path)!r}, '--ray']); "
        "print(r2.output); print('ray' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ,
                       "BRT_HOME": str(tmp_path / "home")})
    assert "--ray takes local, auto or a ray://host:port address" in r.stdout, r.stdout + r.stderr
    assert "cannot be combined with" in r.stdout and "--replay" in r.stdout, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "False", r.stdout


def test_a_ray_address_comes_from_the_operator_and_is_in_the_audit_trail(tmp_path, monkeypatch):
    """Where a harvest on Ray runs: --ray ADDRESS, else BRT_RAY_ADDRESS, else a local instance; the charter's
    harvest.engine only chooses Ray. The record the harvest summary carries says which (issue 41.4)."""
    from memory_store.errors import SettingsError
    from orchestrator.errors import HarvestError
    from orchestrator.harvest.run import _engine

    local = load_charter(write(tmp_path, GOOD))
    ray = load_charter(write(tmp_path, GOOD + "harvest:\n  engine: ray\n", "r.yaml"))
    monkeypatch.delenv("BRT_RAY_ADDRESS", raising=False)
    assert _engine(local, None) == (False, None, None)
    assert _engine(ray, None) == (True, None, {"name": "ray", "address": "a local Ray instance",
                                               "address_from": "default"})
    monkeypatch.setenv("BRT_RAY_ADDRESS", "ray://head.internal:10001")
    assert _engine(local, None) == (False, None, None)  # the setting alone does not put a harvest on Ray
    assert _engine(ray, None) == (True, "ray://head.internal:10001", {
        "name": "ray", "address": "ray://head.internal:10001", "address_from": "BRT_RAY_ADDRESS"})
    assert _engine(local, "ray://other:10001")[1:] == ("ray://other:10001", {
        "name": "ray", "address": "ray://other:10001", "address_from": "--ray"})
    assert _engine(ray, "local")[1:] == (None, {"name": "ray", "address": "a local Ray instance",
                                                "address_from": "--ray local"})
    assert _engine(local, "")[1] == "ray://head.internal:10001"  # --ray with no ADDRESS: the operator's
    with pytest.raises(HarvestError):
        _engine(local, "tcp://10.0.0.5:6379")
    monkeypatch.setenv("BRT_RAY_ADDRESS", "10.0.0.5:6379")
    with pytest.raises(SettingsError) as err:
        _engine(ray, None)
    assert "BRT_RAY_ADDRESS" in str(err.value)
