"""Receiver kinds: where a team's alerts can go. One class per kind, one module each in this
folder (`webhook`, `alertmanager`, `email`, and any module added here: the package imports
every module in its folder, `core.discovery`). `Receiver.kind` stores the name; the form's
choices, the model's validation, planning and sending ask this registry.

A kind says which field holds its target (`url` or `emails`), how it validates a receiver,
what body a notification carries, and how that body is sent (raising `DeliveryError`, which
the sending task records and retries). `docs/extending.md` walks through one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal
from urllib.parse import urlsplit

import requests
from django.core.exceptions import ValidationError

from core.discovery import import_submodules
from core.outbound import OutboundRefused, answered, check_url, failure_reason, outbound_request
from core.registry import Registry

if TYPE_CHECKING:
    from alerts.models import AlertInstance, Receiver, Rule

POST_TIMEOUT_S = 10


class DeliveryError(Exception):
    """A receiver could not be reached or refused the message; the task retries."""


class ReceiverKind:
    """How one kind of receiver is told. Subclass, set the class attributes, `@register`."""

    name: ClassVar[str]  # stored in Receiver.kind
    label: ClassVar[str]  # the form's choice
    target_field: ClassVar[Literal["url", "emails"]] = "url"
    # Told about every firing alert at every evaluation, and about every resolution whatever
    # the receiver's `send_resolved` says (Alertmanager dedups and decides itself).
    every_evaluation: ClassVar[bool] = False

    def clean(self, receiver: Receiver) -> None:
        """ValidationError naming the field when the receiver cannot be sent to. By default:
        a URL is required and must pass the outbound guard."""
        if not receiver.url:
            raise ValidationError({"url": f"A {self.name} receiver needs a URL."})
        try:
            check_url(receiver.url, unresolved_ok=True)
        except OutboundRefused as exc:
            raise ValidationError({"url": str(exc)}) from None

    def target_masked(self, receiver: Receiver) -> str:
        """The target without its secrets, for people outside the team: a URL's scheme and
        host (paths and query strings often carry tokens)."""
        parts = urlsplit(receiver.url)
        return f"{parts.scheme}://{parts.hostname or ''}/…"

    def payload(
        self,
        *,
        receiver: Receiver,
        rule: Rule,
        firing: list[AlertInstance],
        resolved: list[AlertInstance],
    ) -> dict:
        """The stored body of one notification (JSON)."""
        raise NotImplementedError

    def send(self, receiver: Receiver, payload: dict) -> None:
        """Deliver `payload`; raise DeliveryError on failure."""
        raise NotImplementedError


KINDS: Registry[ReceiverKind] = Registry("receiver kind")
register = KINDS.register  # class decorator: `@register class MyKind(ReceiverKind)`
unregister = KINDS.unregister


def kind_choices() -> list[tuple[str, str]]:
    """The model field's choices (a function: migrations name it)."""
    return KINDS.choices()


def get(name: str) -> ReceiverKind:
    """The kind named `name`; DeliveryError for a stored kind no module registers any more."""
    try:
        return KINDS[name]
    except KeyError:
        raise DeliveryError(f"unknown receiver kind {name!r} (no module registers it)") from None


def post_json(url: str, payload: dict | list) -> None:
    """POST `payload` as JSON through the outbound guard; DeliveryError unless 2xx."""
    try:
        response = outbound_request("POST", url, json=payload, timeout=POST_TIMEOUT_S)
    except (requests.RequestException, OutboundRefused) as exc:
        raise DeliveryError(f"{url}: {failure_reason(exc)}") from exc
    if response.status_code >= 300:  # the answer's body is not kept: status only
        raise DeliveryError(f"{url} {answered(response.status_code)}")


import_submodules(__name__)
