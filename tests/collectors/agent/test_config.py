import json
import re

import pytest

from collectors.agent.config import ConfigError, ScrapeTarget, build_config, parse_engine_spec

BASE = {"server": "http://perfhub:8000", "token": "t", "host": "gpu-01"}


def test_an_engine_spec_names_its_source_service_and_url():
    target = parse_engine_spec("vllm:chat-7b=http://127.0.0.1:8000/metrics", [])

    assert target == ScrapeTarget("vllm", "chat-7b", "http://127.0.0.1:8000/metrics")


def test_an_engine_without_a_slug_belongs_to_the_only_service():
    target = parse_engine_spec("tgi=http://127.0.0.1:3000/metrics?x=1", ["chat-7b"])

    assert target == ScrapeTarget("tgi", "chat-7b", "http://127.0.0.1:3000/metrics?x=1")


@pytest.mark.parametrize(
    ("spec", "services", "message"),
    [
        ("vllm=http://h/metrics", [], "names no service"),
        ("vllm=http://h/metrics", ["a", "b"], "several services given"),
        ("Ollama Server:a=http://h/metrics", [], "SOURCE must be an engine's name"),
        ("dcgm:a=http://h/metrics", [], "dcgm-exporter goes with --dcgm"),
        ("vllm:a", [], "expected SOURCE[:SLUG]=URL"),
        ("vllm:a=ftp://h/metrics", [], "is not an http(s) URL"),
        ("vllm:bad slug=http://h/metrics", [], "may hold letters, digits, - and _ only"),
    ],
)
def test_it_rejects_a_bad_engine_spec_saying_why(spec, services, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_engine_spec(spec, services)


def test_flags_win_over_the_environment_which_wins_over_the_file(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text(
        'server = "http://from-file"\ntoken = "file-token"\ninterval = 30\nhost = "h"\n'
    )
    env = {"PERFHUB_TOKEN": "env-token", "PERFHUB_INTERVAL": "20"}

    config = build_config({"config": str(path), "interval": 5.0}, env)

    assert (config.server, config.token, config.interval) == ("http://from-file", "env-token", 5.0)


def test_a_toml_file_lists_engines_as_strings_or_tables(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text(
        'server = "http://perfhub"\ntoken = "t"\nhost = "gpu-01"\nservices = ["chat-7b", "embed"]\n'
        'dcgm = "http://127.0.0.1:9400/metrics"\n'
        'engines = ["vllm:chat-7b=http://127.0.0.1:8000/metrics",\n'
        '  { source = "tgi", service = "embed", url = "http://127.0.0.1:3000/metrics" }]\n'
    )

    config = build_config({"config": str(path)}, {})

    assert config.engines == [
        ScrapeTarget("vllm", "chat-7b", "http://127.0.0.1:8000/metrics"),
        ScrapeTarget("tgi", "embed", "http://127.0.0.1:3000/metrics"),
    ]
    assert config.dcgm == ScrapeTarget("dcgm", "chat-7b", "http://127.0.0.1:9400/metrics")


def test_a_json_file_works_too(tmp_path):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({**BASE, "service": ["chat-7b"], "spool-max-bytes": 2048}))

    config = build_config({"config": str(path)}, {})

    assert (config.services, config.spool_max_bytes) == (["chat-7b"], 2048)


def test_it_rejects_an_unknown_setting_in_the_file_by_name(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text('sever = "http://typo"\n')

    with pytest.raises(ConfigError, match="unknown setting 'sever'"):
        build_config({"config": str(path)}, {})


def test_the_environment_alone_is_enough():
    env = {
        "PERFHUB_SERVER": "http://perfhub:8000/",
        "PERFHUB_TOKEN": "t",
        "PERFHUB_HOST": "gpu-01",
        "PERFHUB_SERVICES": "chat-7b",
        "PERFHUB_ENGINES": "vllm=http://127.0.0.1:8000/metrics, tgi:x=http://127.0.0.1:3000/metrics",
        "PERFHUB_SPOOL_DIR": "/tmp/spool-test",
    }

    config = build_config({}, env)

    assert config.ingest_url == "http://perfhub:8000/api/v1/ingest/"
    assert [(e.source, e.service) for e in config.engines] == [("vllm", "chat-7b"), ("tgi", "x")]
    assert str(config.spool_dir) == "/tmp/spool-test"


def test_it_keeps_a_spool_per_host_under_the_state_directory():
    config = build_config(BASE, {"XDG_STATE_HOME": "/var/lib/x"})

    assert str(config.spool_dir) == "/var/lib/x/perfhub-agent/gpu-01/spool"


@pytest.mark.parametrize(
    ("cli", "message"),
    [
        ({"host": "h"}, "server: required"),
        ({"host": "h", "server": "http://p"}, "token: required"),
        ({**BASE, "interval": 0.0}, "interval: must be more than 0"),
        ({**BASE, "server": "perfhub:8000"}, "server: 'perfhub:8000' is not an http"),
    ],
)
def test_it_refuses_incomplete_settings_naming_the_setting(cli, message):
    with pytest.raises(ConfigError, match=message):
        build_config(cli, {})


def test_dry_run_and_serve_need_no_server():
    assert build_config({"host": "h", "dry_run": True}, {}).push_enabled is False
    assert build_config({"host": "h", "serve": ":9400"}, {}).serve == ("127.0.0.1", 9400)
