"""Owner-only edit pages: who may use them, what they save, and that rejects change nothing."""

import json
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from dossiers.models import Baseline, Bottleneck, ConfigVersion, Experiment, Service
from tests.factories.catalog import baseline_values


def edit_urls(d) -> list[str]:
    slug = d["service"].slug
    return [
        reverse("dossiers:service_edit", args=[slug]),
        reverse("dossiers:narrative_edit", args=[slug]),
        reverse("dossiers:baseline_create", args=[slug]),
        reverse("dossiers:baseline_edit", args=[slug, d["before"].pk]),
        reverse("dossiers:baseline_promote", args=[slug, d["before"].pk]),
        reverse("dossiers:bottleneck_create", args=[slug]),
        reverse("dossiers:bottleneck_edit", args=[slug, d["bottleneck"].pk]),
        reverse("dossiers:experiment_create", args=[slug]),
        reverse("dossiers:experiment_edit", args=[slug, d["experiment"].pk]),
        reverse("dossiers:config_create", args=[slug]),
        reverse("dossiers:import_markdown", args=[slug]),
    ]


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_outsider_gets_403_on_every_edit_url(outsider_client, full_dossier, method):
    for url in edit_urls(full_dossier):
        response = getattr(outsider_client, method)(url, {"summary": "x", "body": "x"})
        assert response.status_code == 403, url


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_anonymous_visitor_is_sent_to_login_from_every_edit_url(client, full_dossier, method):
    for url in [*edit_urls(full_dossier), reverse("dossiers:service_create")]:
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_an_outsider_without_a_team_cannot_create_a_service(outsider_client):
    assert outsider_client.get(reverse("dossiers:service_create")).status_code == 403


def test_an_outsider_post_changes_nothing(outsider_client, full_dossier):
    service = full_dossier["service"]
    outsider_client.post(
        reverse("dossiers:narrative_edit", args=[service.slug]), {"body": "pwned", "summary": "x"}
    )
    assert service.revisions.count() == 2


def test_the_owner_sees_every_edit_form(owner_client, full_dossier):
    for url in edit_urls(full_dossier):
        if url.endswith("/promote/"):
            continue
        assert owner_client.get(url).status_code == 200, url


def test_the_owner_edits_the_narrative_as_a_new_revision(owner_client, owner, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:narrative_edit", args=[service.slug])
    response = owner_client.post(url, {"body": "## New **text**", "summary": "rewrite"})
    assert response.status_code == 302
    latest = service.revisions.first()
    assert (latest.number, latest.body, latest.summary, latest.author) == (
        3,
        "## New **text**",
        "rewrite",
        owner,
    )
    page = owner_client.get(service.get_absolute_url()).content.decode()
    assert "<h2>New <strong>text</strong></h2>" in page


def test_a_narrative_edit_needs_a_summary(owner_client, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:narrative_edit", args=[service.slug])
    response = owner_client.post(url, {"body": "text", "summary": ""})
    assert response.status_code == 200
    assert response.context["form"].errors == {"summary": ["This field is required."]}
    assert service.revisions.count() == 2


def service_post_data(service: Service, **overrides) -> dict:
    data = {
        "team": service.team_id,
        "name": service.name,
        "summary": service.summary,
        "model_name": service.model_name,
        "model_params_b": service.model_params_b,
        "quantization": service.quantization,
        "engine": service.engine,
        "engine_version": service.engine_version,
        "gpu_model": service.gpu_model,
        "gpus_per_replica": service.gpus_per_replica,
        "replicas": service.replicas,
        "slo_p99_e2e_ms": service.slo_p99_e2e_ms,
        "slo_p99_ttft_ms": service.slo_p99_ttft_ms,
        "slo_p99_tpot_ms": service.slo_p99_tpot_ms,
        "gpu_hour_price": service.gpu_hour_price,
        "currency": service.currency,
        "price_per_mtok": service.price_per_mtok,
        "token_basis": service.token_basis,
    }
    data.update(overrides)
    return data


def test_the_owner_saves_service_settings(owner_client, service):
    url = reverse("dossiers:service_edit", args=[service.slug])
    response = owner_client.post(url, service_post_data(service, name="Chat 7B v2", replicas=6))
    assert response.status_code == 302
    service.refresh_from_db()
    assert (service.name, service.replicas) == ("Chat 7B v2", 6)


def test_the_owner_names_owner_on_call_channel_and_runbook(owner_client, service):
    url = reverse("dossiers:service_edit", args=[service.slug])
    people = {
        "owner": "Alice Martin",
        "on_call": "chat-oncall (PagerDuty)",
        "channel": "#chat-perf",
        "runbook_url": "https://wiki.example.com/chat",
    }
    response = owner_client.post(url, service_post_data(service, **people))
    assert response.status_code == 302
    service.refresh_from_db()
    assert {name: getattr(service, name) for name in people} == people


def test_a_negative_price_is_rejected_next_to_its_field_and_nothing_changes(owner_client, service):
    url = reverse("dossiers:service_edit", args=[service.slug])
    response = owner_client.post(
        url, service_post_data(service, name="Renamed", gpu_hour_price="-1")
    )
    assert response.status_code == 200
    assert "gpu_hour_price" in response.context["form"].errors
    assert "greater than or equal to 0" in response.content.decode()
    service.refresh_from_db()
    assert (service.name, service.gpu_hour_price) == ("Chat 7B", Decimal("10"))


def test_the_owner_creates_a_service_in_one_of_their_teams(owner_client, service, team):
    data = service_post_data(service, slug="chat-13b", name="Chat 13B")
    response = owner_client.post(reverse("dossiers:service_create"), data)
    assert response.status_code == 302
    assert Service.objects.get(slug="chat-13b").team == team


def test_a_duplicate_slug_is_rejected(owner_client, service):
    data = service_post_data(service, slug=service.slug, name="Copy")
    response = owner_client.post(reverse("dossiers:service_create"), data)
    assert response.status_code == 200
    assert response.context["form"].errors["slug"] == ["Service with this Slug already exists."]
    assert Service.objects.count() == 1


def test_a_service_cannot_be_created_in_someone_elses_team(owner_client, service):
    from dossiers.models import Team

    other = Team.objects.create(slug="other", name="Other")
    data = service_post_data(service, slug="sneaky", team=other.pk)
    response = owner_client.post(reverse("dossiers:service_create"), data)
    assert response.status_code == 200
    assert "team" in response.context["form"].errors
    assert not Service.objects.filter(slug="sneaky").exists()


def baseline_post_data(**overrides) -> dict:
    values = {k: v for k, v in baseline_values().items() if v is not None}
    values["measured_at"] = "2026-03-02T10:00"
    values["label"] = "after tokenizer fix"
    values.update(overrides)
    return values


def test_the_owner_records_a_baseline_and_makes_it_current(owner_client, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:baseline_create", args=[service.slug])
    response = owner_client.post(url, baseline_post_data(make_current="on"))
    assert response.status_code == 302
    current = Baseline.objects.get(service=service, is_current=True)
    assert current.label == "after tokenizer fix"


def test_a_negative_latency_is_rejected(owner_client, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:baseline_create", args=[service.slug])
    response = owner_client.post(url, baseline_post_data(ttft_p99_ms="-5"))
    assert response.status_code == 200
    assert "ttft_p99_ms" in response.context["form"].errors
    assert service.baselines.count() == 2


def test_a_ratio_above_one_is_rejected(owner_client, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:baseline_create", args=[service.slug])
    response = owner_client.post(url, baseline_post_data(gpu_util="97"))
    assert response.context["form"].errors["gpu_util"] == ["A ratio between 0 and 1."]


def test_editing_a_baseline_keeps_which_one_is_current(owner_client, full_dossier):
    service, after = full_dossier["service"], full_dossier["after"]
    url = reverse("dossiers:baseline_edit", args=[service.slug, after.pk])
    response = owner_client.post(url, baseline_post_data(label="batch 16 (fixed)"))
    assert response.status_code == 302
    after.refresh_from_db()
    assert (after.label, after.is_current) == ("batch 16 (fixed)", True)


def test_the_owner_promotes_a_baseline(owner_client, full_dossier):
    service, before = full_dossier["service"], full_dossier["before"]
    url = reverse("dossiers:baseline_promote", args=[service.slug, before.pk])
    assert owner_client.post(url).status_code == 302
    assert Baseline.objects.get(service=service, is_current=True) == before


def test_promotion_needs_a_post(owner_client, full_dossier):
    service, before = full_dossier["service"], full_dossier["before"]
    url = reverse("dossiers:baseline_promote", args=[service.slug, before.pk])
    assert owner_client.get(url).status_code == 405
    before.refresh_from_db()
    assert not before.is_current


def test_the_owner_records_a_bottleneck_with_evidence(owner_client, full_dossier):
    service, before = full_dossier["service"], full_dossier["before"]
    url = reverse("dossiers:bottleneck_create", args=[service.slug])
    data = {
        "title": "KV cache near full",
        "layer": "framework",
        "kind": "memory_capacity",
        "status": "suspected",
        "symptom": "preemptions at concurrency 64",
        "evidence_baselines": [before.pk],
        "identified_on": "2026-03-02",
    }
    assert owner_client.post(url, data).status_code == 302
    created = Bottleneck.objects.get(title="KV cache near full")
    assert list(created.evidence_baselines.all()) == [before]


def test_a_bottleneck_cannot_cite_another_services_baseline(
    owner_client, full_dossier, make_service
):
    service = full_dossier["service"]
    foreign = make_service("other-svc").baselines.get()
    url = reverse("dossiers:bottleneck_edit", args=[service.slug, full_dossier["bottleneck"].pk])
    data = {
        "title": "changed",
        "layer": "framework",
        "kind": "cpu",
        "status": "confirmed",
        "symptom": "s",
        "evidence_baselines": [foreign.pk],
        "identified_on": "2026-03-02",
    }
    response = owner_client.post(url, data)
    assert response.status_code == 200
    assert "evidence_baselines" in response.context["form"].errors
    full_dossier["bottleneck"].refresh_from_db()
    assert full_dossier["bottleneck"].title == "Tokenizer runs serially on the CPU"


def test_a_bottleneck_cannot_be_resolved_before_it_was_identified(owner_client, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:bottleneck_create", args=[service.slug])
    data = {
        "title": "t",
        "layer": "hardware",
        "kind": "compute",
        "status": "mitigated",
        "symptom": "s",
        "identified_on": "2026-03-02",
        "resolved_on": "2026-03-01",
    }
    response = owner_client.post(url, data)
    assert response.context["form"].errors["resolved_on"] == [
        "Cannot be resolved before it was identified."
    ]


def experiment_data(d, **overrides) -> dict:
    data = {
        "title": "Parallel tokenizer",
        "hypothesis": "The GPU waits for a serial tokenizer.",
        "variable_key": "tokenizer_pool_size",
        "value_from": "1",
        "value_to": "8",
        "before": d["before"].pk,
        "after": d["after"].pk,
        "verdict": "adopted",
        "run_on": "2026-03-02",
    }
    data.update(overrides)
    return data


def test_the_owner_records_an_experiment(owner_client, owner, full_dossier):
    url = reverse("dossiers:experiment_create", args=[full_dossier["service"].slug])
    assert owner_client.post(url, experiment_data(full_dossier)).status_code == 302
    assert Experiment.objects.get(title="Parallel tokenizer").created_by == owner


def test_an_experiment_cannot_use_another_services_baseline(
    owner_client, full_dossier, make_service
):
    foreign = make_service("other-svc").baselines.get()
    url = reverse("dossiers:experiment_create", args=[full_dossier["service"].slug])
    response = owner_client.post(url, experiment_data(full_dossier, after=foreign.pk))
    assert response.status_code == 200
    assert "after" in response.context["form"].errors
    assert not Experiment.objects.filter(title="Parallel tokenizer").exists()


def test_an_experiment_needs_two_different_baselines(owner_client, full_dossier):
    url = reverse("dossiers:experiment_create", args=[full_dossier["service"].slug])
    data = experiment_data(full_dossier, after=full_dossier["before"].pk)
    response = owner_client.post(url, data)
    assert response.context["form"].errors["after"] == [
        "Before and after must be two different measurements."
    ]


def test_the_experiment_form_offers_the_target_figure_as_a_select(owner_client, full_dossier):
    url = reverse("dossiers:experiment_create", args=[full_dossier["service"].slug])
    page = owner_client.get(url).content.decode()
    select = re.search(r'<select name="target".*?</select>', page, re.S).group(0)
    assert '<option value="output_tps">Output tokens/s</option>' in select
    assert '<option value="ttft_p99_ms">TTFT P99 (ms)</option>' in select


def test_the_owner_states_the_figure_an_experiment_aims_to_move(owner_client, full_dossier):
    url = reverse("dossiers:experiment_create", args=[full_dossier["service"].slug])
    owner_client.post(url, experiment_data(full_dossier, target="output_tps"))
    assert Experiment.objects.get(title="Parallel tokenizer").target == "output_tps"


def test_a_target_the_baselines_did_not_measure_is_refused_beside_the_select(
    owner_client, full_dossier
):
    Baseline.objects.filter(pk=full_dossier["before"].pk).update(gpu_util=None)
    url = reverse("dossiers:experiment_create", args=[full_dossier["service"].slug])
    response = owner_client.post(url, experiment_data(full_dossier, target="gpu_util"))
    assert response.context["form"].errors["target"] == [
        "GPU-Util was not measured by the before baseline: state a figure both measured, or "
        "leave it blank."
    ]
    assert not Experiment.objects.filter(title="Parallel tokenizer").exists()


def test_the_owner_adds_a_config_version_that_becomes_current(owner_client, owner, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:config_create", args=[service.slug])
    response = owner_client.post(url, {"config": '{"max_num_seqs": 32}', "note": "bigger"})
    assert response.status_code == 302
    current = ConfigVersion.objects.get(service=service, is_current=True)
    assert (current.version, current.config, current.author) == (3, {"max_num_seqs": 32}, owner)


def test_a_config_that_is_not_json_is_rejected(owner_client, full_dossier):
    service = full_dossier["service"]
    url = reverse("dossiers:config_create", args=[service.slug])
    response = owner_client.post(url, {"config": "{max_num_seqs: 32}"})
    assert response.status_code == 200
    assert response.context["form"].errors["config"][0].startswith("Config is not JSON:")
    assert service.config_versions.count() == 2


def test_the_config_form_starts_from_the_current_config(owner_client, full_dossier):
    service = full_dossier["service"]
    response = owner_client.get(reverse("dossiers:config_create", args=[service.slug]))
    assert json.loads(response.context["form"].initial["config"])["max_num_seqs"] == 16
