"""Logs: JSON lines in production (one per request, one per task, each with its duration and
outcome), plain lines under DEBUG; the demo console without a line per agent push."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from celery import shared_task

from dashboards.management.commands.run_demo import QuietIngest
from perfhub.logs import JsonFormatter
from perfhub.tasks import heartbeat

ROOT = Path(__file__).resolve().parents[2]


@shared_task(name="tests.ops.fails")
def fails() -> None:
    raise RuntimeError("this task fails")


def _records(caplog, logger: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == logger]


@pytest.mark.django_db
def test_a_request_logs_one_line_with_status_outcome_and_duration(client, caplog):
    caplog.set_level(logging.INFO, logger="perfhub.requests")
    client.get("/healthz")
    [record] = _records(caplog, "perfhub.requests")
    line = json.loads(JsonFormatter().format(record))
    assert line["event"] == "request"
    assert (line["method"], line["path"], line["status"]) == ("GET", "/healthz", 200)
    assert line["outcome"] == "ok"
    assert isinstance(line["duration_ms"], float)
    assert line["level"] == "INFO"
    assert line["logger"] == "perfhub.requests"
    assert line["ts"].endswith("+00:00")


@pytest.mark.django_db
def test_a_request_line_leaves_the_query_string_out(client, caplog):
    caplog.set_level(logging.INFO, logger="perfhub.requests")
    client.get("/accounts/login/?next=/secret-token-here")
    [record] = _records(caplog, "perfhub.requests")
    assert "secret-token-here" not in JsonFormatter().format(record)


@pytest.mark.django_db
def test_a_client_error_is_logged_as_one(client, caplog):
    caplog.set_level(logging.INFO, logger="perfhub.requests")
    client.post("/api/v1/ingest/", {}, content_type="application/json")
    [record] = _records(caplog, "perfhub.requests")
    assert (record.status, record.outcome) in {(401, "client_error"), (403, "client_error")}


def test_a_task_logs_one_line_with_outcome_and_duration(caplog):
    caplog.set_level(logging.INFO, logger="perfhub.tasks")
    heartbeat.apply()  # run here, as a worker would run it
    [record] = _records(caplog, "perfhub.tasks")
    line = json.loads(JsonFormatter().format(record))
    assert (line["event"], line["task"], line["outcome"]) == ("task", "perfhub.heartbeat", "ok")
    assert isinstance(line["duration_ms"], float)


def test_a_failing_task_logs_an_error_line(caplog):
    caplog.set_level(logging.INFO, logger="perfhub.tasks")
    assert fails.apply(throw=False).failed()
    [record] = _records(caplog, "perfhub.tasks")
    assert record.levelname == "ERROR"
    assert (record.task, record.outcome) == ("tests.ops.fails", "error")


def _log_a_line(debug: str, tmp_path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"LOG_FORMAT", "DATABASE_URL"}}
    env.update(DEBUG=debug, PERFHUB_VAR_DIR=str(tmp_path))
    code = "import logging; logging.getLogger('perfhub.x').warning('a line')"
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.stderr.strip().splitlines()[-1]


def test_production_logs_json_lines(tmp_path):
    line = json.loads(_log_a_line("0", tmp_path))
    assert (line["level"], line["logger"], line["message"]) == ("WARNING", "perfhub.x", "a line")


def test_debug_logs_plain_lines(tmp_path):
    line = _log_a_line("1", tmp_path)
    assert line.endswith("WARNING perfhub.x: a line")


def _server_record(requestline: str, status: int) -> logging.LogRecord:
    record = logging.LogRecord(
        "django.server", logging.INFO, __file__, 1, '"%s" %s %s', (requestline, status, 40), None
    )
    record.status_code = status
    return record


def test_the_demo_console_drops_accepted_pushes_only():
    quiet = QuietIngest()
    assert not quiet.filter(_server_record("POST /api/v1/ingest/ HTTP/1.1", 202))
    assert quiet.filter(_server_record("POST /api/v1/ingest/ HTTP/1.1", 400))
    assert quiet.filter(_server_record("GET /services/chat-7b/ HTTP/1.1", 200))


def _agent(*flags: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "demo.agent", "--service", "chat-7b",
         "--host", "h", "--once", "--dry-run", *flags],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_the_agent_says_nothing_per_batch_by_default():
    assert "gpu row(s)" not in _agent()


def test_the_agent_logs_each_batch_with_v():
    assert "gpu row(s)" in _agent("-v")
