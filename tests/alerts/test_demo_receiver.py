"""The demo's alerts reach someone: each demo team has an on-call receiver whose email is a
file under the var directory."""

import pytest

from alerts.models import Notification
from demo.receivers import demo_mail_dir, ensure_demo_receivers

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_mail(settings, tmp_path):
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    settings.VAR_DIR = tmp_path
    return demo_mail_dir()


def test_every_team_without_a_receiver_gets_the_demo_on_call_once(team):
    assert (ensure_demo_receivers([team]), ensure_demo_receivers([team])) == (1, 0)


def test_a_configured_mail_backend_is_left_alone(settings, tmp_path):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.VAR_DIR = tmp_path
    assert demo_mail_dir() is None
    assert settings.EMAIL_BACKEND == "django.core.mail.backends.smtp.EmailBackend"


def test_a_critical_alert_is_mailed_to_the_demo_on_call_as_a_file(demo_mail, team, timeline,
                                                                  p99_rule):  # fmt: skip
    p99_rule.severity = "critical"
    p99_rule.save()
    ensure_demo_receivers([team])
    timeline.run([3000] * 4)
    sent = Notification.objects.get(rule=p99_rule)
    mail = "".join(path.read_text() for path in demo_mail.iterdir())
    assert sent.status == "sent"
    assert "oncall@inference.demo.invalid" in mail and "P99 e2e above SLO" in mail
