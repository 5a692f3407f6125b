"""Onboarding says how fresh each section is and whether the baseline still holds."""

from datetime import UTC, datetime, timedelta

from django.urls import reverse

from dossiers.models import ConfigVersion, NarrativeRevision
from tests.factories.catalog import make_baseline

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def onboarding(client, owner, service) -> str:
    client.force_login(owner)
    return client.get(reverse("dossiers:onboarding", args=[service.slug])).content.decode()


def test_it_gives_the_baseline_age(client, owner, service, time_machine):
    time_machine.move_to(NOW)
    make_baseline(service, measured_at=NOW - timedelta(days=12))
    page = onboarding(client, owner, service)
    assert "measured 2026-11-19, 12 days ago" in page
    assert ">stale<" not in page


def test_it_calls_a_baseline_older_than_the_setting_stale(client, owner, service, settings,
                                                          time_machine):  # fmt: skip
    time_machine.move_to(NOW)
    settings.PERFHUB_BASELINE_STALE_DAYS = 30
    make_baseline(service, measured_at=NOW - timedelta(days=45))
    page = onboarding(client, owner, service)
    assert "45 days ago" in page and ">stale<" in page and "older than 30 days" in page


def test_it_dates_the_narrative_and_the_config(client, owner, service, time_machine):
    time_machine.move_to(datetime(2026, 11, 28, 9, 30, tzinfo=UTC))
    NarrativeRevision.objects.create(service=service, number=1, body="Chat for support agents.")
    ConfigVersion.objects.create(service=service, version=3, config={"max_num_seqs": 64},
                                 is_current=True)  # fmt: skip
    time_machine.move_to(NOW)
    page = onboarding(client, owner, service)
    assert "Narrative last revised 2026-11-28 09:30 UTC" in page
    assert "Config v3 recorded 2026-11-28 09:30 UTC" in page


def test_it_embeds_the_claims_check_the_dossier_embeds(client, owner, service):
    make_baseline(service)
    page = onboarding(client, owner, service)
    assert 'data-fragment="/dashboards/services/chat-7b/claims/"' in page


def test_it_embeds_what_changed_this_week_second_after_whom_to_call(client, owner, service):
    page = onboarding(client, owner, service)
    assert 'data-fragment="/dashboards/services/chat-7b/timeline/?days=7"' in page
    assert page.index("Whom to call</h2>") < page.index("What changed this week</h2>")
    assert page.index("What changed this week</h2>") < page.index("What the service is</h2>")


def test_this_weeks_timeline_leaves_out_what_happened_before(client, owner, service,
                                                              time_machine):  # fmt: skip
    time_machine.move_to(NOW - timedelta(days=10))
    ConfigVersion.objects.create(service=service, version=1, config={"max_num_seqs": 32})
    time_machine.move_to(NOW - timedelta(days=2))
    ConfigVersion.objects.create(service=service, version=2, config={"max_num_seqs": 64},
                                 is_current=True)  # fmt: skip
    time_machine.move_to(NOW)
    client.force_login(owner)
    url = reverse("dashboards:service_timeline", args=[service.slug])
    week = client.get(url + "?days=7").content.decode()
    assert "v2" in week and "v1" not in week
    assert "2026-11-29 12:00 UTC<" in week  # one date format, the zone said once
    everything = client.get(url).content.decode()
    assert "v1" in everything and "v2" in everything


def test_a_quiet_week_says_so(client, owner, service):
    client.force_login(owner)
    url = reverse("dashboards:service_timeline", args=[service.slug])
    assert "Nothing in the last 7 days" in client.get(url + "?days=7").content.decode()
