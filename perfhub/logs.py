"""Structured logs: one JSON line per record in production, one line per request and per task.

The formatter is python-json-logger's; the request line comes from a middleware and the task
line from Celery's task signals (connected in perfhub/celery.py), each with its duration in
milliseconds and its outcome, so a log pipeline can count and time them without parsing text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

request_log = logging.getLogger("perfhub.requests")
task_log = logging.getLogger("perfhub.tasks")


class JsonFormatter(_JsonFormatter):
    """`{"ts", "level", "logger", "message", ...extra}` with an ISO 8601 UTC timestamp."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", "ts")
        super().__init__("{levelname}{name}{message}", *args, style="{", **kwargs)


def _outcome(status: int) -> str:
    if status >= 500:
        return "error"
    return "client_error" if status >= 400 else "ok"


class RequestLogMiddleware:
    """One line per request: method, path (no query string: it may carry secrets), status,
    outcome and duration. First in MIDDLEWARE, so it times (and sees) everything below it."""

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        duration_ms = (time.perf_counter() - started) * 1000
        user = getattr(request, "user", None)
        request_log.info(
            "%s %s %s",
            request.method,
            request.path,
            response.status_code,
            extra={
                "event": "request",
                "method": request.method,
                "path": request.path,
                "status": response.status_code,
                "outcome": _outcome(response.status_code),
                "duration_ms": round(duration_ms, 2),
                "user_id": user.pk if user is not None and user.is_authenticated else None,
            },
        )
        return response


# Start times of running tasks, by task id (a worker process runs one task per thread).
_started: dict[str, float] = {}


def task_started(task_id: str | None = None, **_) -> None:
    if task_id:
        _started[task_id] = time.perf_counter()


def task_finished(
    task_id: str | None = None, task=None, state: str | None = None, retval=None, **_
) -> None:
    started = _started.pop(task_id, None) if task_id else None
    duration_ms = (time.perf_counter() - started) * 1000 if started is not None else None
    name = getattr(task, "name", "?")
    # No state: the exception left the tracer (a task run eagerly, propagating its error).
    outcome = {"SUCCESS": "ok", "FAILURE": "error", "RETRY": "retry", None: "error"}.get(
        state, str(state).lower()
    )
    task_log.log(
        logging.ERROR if outcome == "error" else logging.INFO,
        "task %s %s",
        name,
        outcome,
        extra={
            "event": "task",
            "task": name,
            "task_id": task_id,
            "outcome": outcome,
            "duration_ms": round(duration_ms, 2) if duration_ms is not None else None,
            # A plain return value (e.g. how many batches a roll-up took) says what it did.
            "result": retval if isinstance(retval, int | float | str | bool) else None,
        },
    )
