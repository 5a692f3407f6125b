"""Pull mode: fetch a host's URL and feed the ingest pipeline (docs/integrations.md, "Pull").

An engine or dcgm-exporter `/metrics` becomes a one-scrape batch; an agent's endpoint answers
with a whole batch document, deduplicated by its batch id like a push. A failure marks the host
down with the error shown on the hosts page; the next success marks it up again.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import requests
from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import APIException

from collectors.instruments import PULL_ERRORS, record_ingest
from collectors.models import Host
from collectors.services.ingest import IngestResult, ingest_document
from core.outbound import OutboundRefused, answered, failure_reason, outbound_request

MAX_ERROR_CHARS = 2000
log = logging.getLogger(__name__)


class PullError(Exception):
    """A pull failed; the message is what the hosts page shows."""


@dataclass(frozen=True)
class PullOutcome:
    host_id: int
    ok: bool
    error: str = ""
    result: IngestResult | None = None


def due_pull_hosts(*, now: datetime | None = None) -> list[int]:
    """Claim the pull targets whose interval has elapsed; returns their ids.

    The claim is a conditional update of `last_pull_at`, so overlapping beat ticks (or two
    schedulers) never pull a host twice in one interval.
    """
    now = now or timezone.now()
    claimed = []
    targets = Host.objects.exclude(pull_url="").values_list("id", "last_pull_at", "pull_interval_s")
    for host_id, last, interval in targets:
        if last is not None and now - last < timedelta(seconds=interval):
            continue
        unchanged = Q(last_pull_at__isnull=True) if last is None else Q(last_pull_at=last)
        if Host.objects.filter(unchanged, pk=host_id).update(last_pull_at=now):
            claimed.append(host_id)
    return claimed


def pull_host(*, host_id: int, now: datetime | None = None) -> PullOutcome:
    """Fetch the host's pull URL once and ingest what it answers; record up/down."""
    now = now or timezone.now()
    host = Host.objects.select_related("pull_service").get(pk=host_id)
    try:
        result = ingest_document(host=host, document=_fetch_document(host, now), now=now)
    except PullError as exc:
        return _mark(host, now, error=str(exc))
    except APIException as exc:  # the document failed validation, like a push would
        record_ingest(via="pull", outcome="rejected")
        return _mark(host, now, error=_rejection(exc))
    except Exception as exc:  # anything else is this host's problem only: record, go on
        log.exception("pull of host %s failed", host.pk)
        return _mark(host, now, error=f"could not store the pull: {type(exc).__name__}: {exc}")
    record_ingest(
        via="pull", outcome="duplicate" if result.duplicate else "accepted", counts=result.counts
    )
    return _mark(host, now, result=result)


def _rejection(exc: APIException) -> str:
    """Why ingest refused what the target answered, naming the fields only: a validation
    message can quote the answer (a value, a label), and the host page is read by every user."""
    if isinstance(exc.detail, dict):
        fields = [f"{name}{_line(messages)}" for name, messages in exc.detail.items()]
        shown = ", ".join(fields[:5]) + (f" and {len(fields) - 5} more" if len(fields) > 5 else "")
        return f"rejected ({exc.status_code}): invalid {shown}"
    return f"rejected ({exc.status_code}): not a valid batch"


def _line(messages) -> str:
    """ " (line N)" when the message names a line of the exposition (our words, not its)."""
    first = messages[0] if isinstance(messages, list) and messages else messages
    found = re.match(r"line (\d+)\b", str(first))
    return f" (line {found.group(1)})" if found else ""


def _fetch_document(host: Host, now: datetime) -> dict:
    try:
        response = outbound_request(
            "GET",
            host.pull_url,
            timeout=settings.PERFHUB_PULL_TIMEOUT_S,
            headers={"Accept": "application/json, text/plain;q=0.9"},
        )
        response.raise_for_status()
    except (requests.RequestException, OutboundRefused) as exc:
        raise PullError(failure_reason(exc)) from exc
    if len(response.content) > settings.PERFHUB_INGEST_MAX_BYTES:
        raise PullError(f"answer over {settings.PERFHUB_INGEST_MAX_BYTES} bytes")
    if host.pull_kind == Host.PULL_AGENT:
        try:
            return response.json()
        except ValueError as exc:
            raise PullError(answered(response.status_code, "without JSON")) from exc
    stamp = now.isoformat()
    return {
        # A pulled scrape has no id of its own; each fetch is a new observation.
        "batch_id": str(uuid.uuid4()),
        "host": host.name,
        "agent_version": "pull",
        "sent_at": stamp,
        "scrapes": [
            {
                "ts": stamp,
                "service": host.pull_service.slug if host.pull_service else "",
                "source": host.pull_kind,
                "exposition": response.text,
            }
        ],
    }


def _mark(
    host: Host, now: datetime, *, error: str = "", result: IngestResult | None = None
) -> PullOutcome:
    if error:
        PULL_ERRORS.labels("host").inc()
    status = Host.Status.DOWN if error else Host.Status.UP
    # An answer stored but holding nothing PerfHub reads is up, with the reason beside it.
    note = error or "; ".join(result.warnings if result else [])
    update = {"status": status, "last_error": note[:MAX_ERROR_CHARS], "last_pull_at": now}
    if not error:
        update["last_seen_at"] = now
    Host.objects.filter(pk=host.pk).update(**update)
    return PullOutcome(host_id=host.pk, ok=not error, error=error, result=result)
