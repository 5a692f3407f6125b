"""SLOs as objects of a service: the team edits them, the dossier lists them, other code reads
them as plain (metric, threshold, target) objectives; the SLO P99 fields stay the simple case."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dossiers.models import Slo

pytestmark = pytest.mark.django_db


def new_url(service) -> str:
    return reverse("dossiers:slo_create", args=[service.slug])


FORM = {"name": "Interactive", "kind": "latency", "ttft_ms": "500", "tpot_ms": "50",
        "e2e_ms": "", "target_percent": "99", "window_days": "28"}  # fmt: skip


def test_a_member_adds_an_slo_and_the_dossier_lists_it(owner_client, service):
    response = owner_client.post(new_url(service), FORM)
    assert response.status_code == 302
    page = owner_client.get(service.get_absolute_url()).content.decode()
    assert "TTFT ≤ 500 ms and TPOT ≤ 50 ms for 99% of requests over 28 days" in page


def test_someone_outside_the_team_cannot_add_one(outsider_client, service):
    assert outsider_client.post(new_url(service), FORM).status_code == 403
    assert not Slo.objects.exists()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"target_percent": "100"}, "target_percent", "below 100"),
        ({"ttft_ms": "", "tpot_ms": ""}, "ttft_ms", "at least one threshold"),
        ({"kind": "availability"}, "ttft_ms", "no latency threshold"),
        ({"window_days": "365"}, "window_days", "90"),
    ],
)
def test_invalid_input_names_the_field(owner_client, service, change, field, message):
    response = owner_client.post(new_url(service), {**FORM, **change})
    assert response.status_code == 200
    assert message in " ".join(response.context["form"].errors[field])
    assert not Slo.objects.exists()


def test_objectives_come_from_the_p99_fields_until_a_latency_slo_exists(service):
    assert sorted(service.objectives()) == [
        ("e2e", 2000.0, 0.99), ("tpot", 50.0, 0.99), ("ttft", 500.0, 0.99),
    ]  # fmt: skip
    Slo.objects.create(service=service, name="Snappy", ttft_ms=300, target_percent=99.9)
    assert service.objectives() == [("ttft", 300.0, 0.999)]


def test_an_availability_slo_adds_no_latency_objective(service):
    Slo.objects.create(service=service, name="Up", kind="availability", target_percent=99.5)
    assert len(service.slo_objects()) == 2  # the P99 fields' implied one, and availability
    assert all(metric != "availability" for metric, _, _ in service.objectives())


def test_a_member_deletes_an_slo(owner_client, service):
    slo = Slo.objects.create(service=service, name="Snappy", ttft_ms=300)
    url = reverse("dossiers:slo_delete", args=[service.slug, slo.pk])
    assert owner_client.get(url).status_code == 405
    assert owner_client.post(url).status_code == 302
    assert not Slo.objects.exists()


@pytest.mark.parametrize("page", ["dossiers:dossier", "dossiers:onboarding"])
def test_the_page_opens_with_the_right_now_verdict(owner_client, service, page):
    html = owner_client.get(reverse(page, args=[service.slug])).content.decode()
    verdict = html.index('id="right-now"')
    assert f'data-fragment="/dashboards/services/{service.slug}/right-now/"' in html
    assert verdict < html.index('id="people"' if "onboarding" in page else 'class="summary"')
