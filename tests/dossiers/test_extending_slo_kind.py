"""docs/extending.md, "An SLO kind", followed literally: the block as a module in
dossiers/slo_kinds/, discovered, offered and validated by the form, counted from roll-ups of
pushed requests, and shown on the dossier and its right-now verdict."""

from datetime import timedelta

import pytest
import time_machine
from django.urls import reverse

from alerts import slo as slo_reads
from alerts.models import Rule
from alerts.prometheus_rules import rules_yaml
from collectors.models import Host
from dossiers import slo_kinds
from dossiers.forms import SloForm
from dossiers.models import Slo
from tests.extending_doc import module_from_doc
from tests.factories.alerts import LAG, feed, minute

pytestmark = pytest.mark.django_db

NOW = minute(30) + LAG + timedelta(seconds=5)  # minutes 0-29 closed and past the lag
FORM = {"name": "First token", "kind": "ttft-only", "ttft_ms": "500", "tpot_ms": "",
        "e2e_ms": "", "target_percent": "99", "window_days": "28"}  # fmt: skip


@pytest.fixture
def ttft_only(tmp_path):
    with module_from_doc("An SLO kind", tmp_path, lambda: slo_kinds.unregister("ttft-only")):
        yield slo_kinds.KINDS["ttft-only"]


def new_slo(client, service, **change):
    return client.post(reverse("dossiers:slo_create", args=[service.slug]), {**FORM, **change})


def test_the_documented_kind_is_a_form_choice(service, ttft_only):
    assert "ttft-only" in dict(SloForm(service=service).fields["kind"].choices)


def test_the_form_says_which_thresholds_the_documented_kind_reads(service, ttft_only):
    assert SloForm(service=service).fields["kind"].help_text == (
        "Thresholds read: latency: TTFT, TPOT, end-to-end; availability: none; ttft-only: TTFT"
    )


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"ttft_ms": ""}, "ttft_ms", "A TTFT-only SLO needs its TTFT threshold."),
        ({"tpot_ms": "50"}, "tpot_ms", "A ttft-only SLO reads only its TTFT threshold"),
    ],
)
def test_the_documented_kind_refuses_an_incomplete_slo_naming_the_field(
    owner_client, service, ttft_only, change, field, message
):
    response = new_slo(owner_client, service, **change)
    assert response.status_code == 200
    assert message in " ".join(response.context["form"].errors[field])
    assert not Slo.objects.exists()


def test_an_slo_of_the_documented_kind_is_counted_from_rollups_and_shown(
    owner_client, service, ttft_only
):
    assert new_slo(owner_client, service).status_code == 302
    host = Host.objects.create(name="gpu-node-01")
    # feed() gives each request a TTFT of a tenth of its e2e: 20 minutes at 300 ms, 10 at 800.
    for i in range(30):
        feed(service, host, i, e2e_ms=3000 if i < 20 else 8000)

    readings = slo_reads.standings([service], now=NOW)[service.pk].readings
    reading = next(r for r in readings if r.slo.kind == "ttft-only")
    assert (reading.count.total, reading.count.good_low, reading.count.good_high) == (
        3600,
        2400,
        2400,
    )
    assert reading.source.startswith("pushed requests")

    dossier = owner_client.get(service.get_absolute_url()).content.decode()
    assert "first token within 500 ms for 99% of requests over 28 days" in dossier
    with time_machine.travel(NOW, tick=False):
        fragment = owner_client.get(
            reverse("dashboards:service_right_now", args=[service.slug])
        ).content.decode()
    assert "First token" in fragment
    assert "66.67%" in fragment


def test_the_prometheus_export_leaves_out_a_burn_rule_over_the_documented_kind(service, ttft_only):
    Slo.objects.create(service=service, name="First token", kind="ttft-only", ttft_ms=500)
    Rule.objects.create(
        service=service, name="SLO budget burn: fast", kind="slo_burn", threshold=14.4,
        window_s=3600, for_s=0, min_requests=100, severity="critical",
    )  # fmt: skip
    text = rules_yaml(service, engine_selector='job="vllm"', dcgm_selector="")
    assert "SLO budget burn: fast: SLO 'First token' is of kind 'ttft-only'" in text


def test_an_slo_whose_kind_module_is_gone_counts_nothing_and_says_so(
    owner_client, service, ttft_only
):
    Slo.objects.create(service=service, name="First token", kind="ttft-only", ttft_ms=500)
    host = Host.objects.create(name="gpu-node-01")
    feed(service, host, 29, e2e_ms=3000)
    slo_kinds.unregister("ttft-only")  # the module was deleted

    readings = slo_reads.standings([service], now=NOW)[service.pk].readings
    reading = next(r for r in readings if r.slo.kind == "ttft-only")
    assert reading.count.total == 0
    assert reading.notes == ("unknown SLO kind 'ttft-only' (no module registers it)",)
    assert owner_client.get(service.get_absolute_url()).status_code == 200
