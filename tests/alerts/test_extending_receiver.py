"""docs/extending.md, "A receiver kind", followed literally: the block as a module in
alerts/receivers/, discovered, offered, validated, and told when an alert fires."""

import pytest
from django.core.exceptions import ValidationError

from alerts import receivers
from alerts.forms import ReceiverForm
from alerts.models import Receiver
from tests.extending_doc import module_from_doc

pytestmark = pytest.mark.django_db

FIRE = [3000] * 4  # the P99 rule: pending at minute 0, firing at 3


@pytest.fixture
def chat(tmp_path):
    with module_from_doc("A receiver kind", tmp_path, lambda: receivers.unregister("chat")):
        yield receivers.KINDS["chat"]


@pytest.fixture
def chat_receiver(team, webhook_server, chat) -> Receiver:
    return Receiver.objects.create(team=team, name="room", kind="chat", url=webhook_server.url)


def test_the_documented_receiver_is_told_when_an_alert_fires(
    timeline, p99_rule, chat_receiver, webhook_server
):
    timeline.run(FIRE)
    [body] = webhook_server.bodies
    assert body["text"].startswith("[FIRING:1] P99 e2e above SLO (chat-7b) https://")


def test_the_documented_receiver_is_a_form_choice(owner, chat):
    assert "chat" in dict(ReceiverForm(user=owner).fields["kind"].choices)


def test_the_documented_receiver_without_a_url_is_refused_naming_the_field(team, chat):
    receiver = Receiver(team=team, name="room", kind="chat")
    with pytest.raises(ValidationError) as refused:
        receiver.full_clean()
    assert refused.value.message_dict["url"] == ["A chat receiver needs a URL."]
