"""Counts and times ingest API calls for `/metrics`, from outside the view (which stays thin)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from collectors.instruments import INGEST_SECONDS, record_ingest

OUTCOMES = {202: "accepted", 200: "duplicate", 400: "rejected", 401: "refused", 403: "refused",
            413: "too_large"}  # fmt: skip


class IngestMetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.path = ""  # resolved on the first request, once the URLconf is loaded

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.path = self.path or reverse("collectors-ingest")
        if request.method != "POST" or request.path != self.path:
            return self.get_response(request)
        started = time.perf_counter()
        response = self.get_response(request)
        INGEST_SECONDS.observe(time.perf_counter() - started)
        outcome = OUTCOMES.get(response.status_code, "error")
        data = getattr(response, "data", None)
        counts = data.get("counts") if outcome == "accepted" and isinstance(data, dict) else None
        record_ingest(via="api", outcome=outcome, counts=counts)
        return response
