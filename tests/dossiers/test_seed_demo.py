"""`seed_demo`: a realistic fleet with the seed's three scenarios, built idempotently."""

import io
import math

import pytest
from django.contrib.auth import get_user_model
from django.core.checks import run_checks
from django.core.management import CommandError, call_command

from dossiers import demo
from dossiers.markdown_io import export_dossier, import_dossier
from dossiers.models import (
    PERCENTILES,
    Baseline,
    Bottleneck,
    ConfigVersion,
    Experiment,
    Membership,
    Service,
)


@pytest.fixture
def fleet(db):
    return demo.build_demo()


def table_counts():
    models = (Service, Baseline, Bottleneck, Experiment, ConfigVersion, Membership)
    return (*(model.objects.count() for model in models), get_user_model().objects.count())


def test_it_builds_at_least_six_services_on_four_engines_and_gpus(fleet):
    services = list(Service.objects.all())
    assert len(services) >= 6
    assert {s.engine for s in services} >= {"vllm", "tgi", "sglang", "triton"}
    gpus = " ".join(s.gpu_model for s in services)
    assert all(gpu in gpus for gpu in ("H100", "A100", "L40S", "A10G"))
    assert len({s.team_id for s in services}) >= 3


def test_every_service_has_a_full_dossier(fleet):
    for service in Service.objects.all():
        assert service.revisions.exists(), service.slug
        assert 1 <= service.config_versions.count() <= 3, service.slug
        assert service.config_versions.filter(is_current=True).count() == 1, service.slug
        assert service.baselines.filter(is_current=True).count() == 1, service.slug
        assert service.bottlenecks.exists(), service.slug
        assert service.experiments.exists(), service.slug


def test_every_baseline_has_a_consistent_latency_distribution(fleet):
    for b in Baseline.objects.all():
        for metric in ("e2e", "ttft", "tpot"):
            values = [b.latency(metric, p) for p in PERCENTILES]
            assert values == sorted(values), (b.label, metric)
        for p in PERCENTILES:
            assert b.latency("e2e", p) >= b.latency("ttft", p), (b.label, p)
        assert b.output_tps == pytest.approx(b.qps * b.output_tokens_mean, rel=0.01)
        assert 0 <= b.gpu_util <= 1 and 0 <= b.sm_active <= b.gpu_util


def test_seed_scenario_a_7b_p99_above_8s_with_gpus_30_percent_busy(fleet):
    service = Service.objects.get(slug="support-chat-7b")
    assert service.model_params_b == 7
    slow = service.baselines.get(e2e_p99_ms__gte=8000)
    assert slow.gpu_util == pytest.approx(0.30, abs=0.03)
    bottleneck = service.bottlenecks.get(evidence_baselines=slow)
    assert bottleneck.kind == Bottleneck.Kind.CPU


def test_seed_scenario_b_parallel_tokenizer_takes_p99_from_3s_to_800ms(fleet):
    service = Service.objects.get(slug="doc-summarizer")
    experiment = service.experiments.get(title__icontains="tokenizer")
    assert experiment.verdict == Experiment.Verdict.ADOPTED
    assert (experiment.before.e2e_p99_ms, experiment.after.e2e_p99_ms) == (3000, 800)
    assert experiment.more_than_one_variable is False
    assert service.bottlenecks.get(kind=Bottleneck.Kind.CPU).title.startswith("Tokenizer")


def test_seed_scenario_c_13b_batch_sweep_has_its_sweet_spot_at_16(fleet):
    service = Service.objects.get(slug="code-review-13b")
    assert service.model_params_b == 13
    sweep = {b.concurrency: b for b in service.baselines.filter(label__startswith="Batch sweep")}
    assert sorted(sweep) == [1, 2, 4, 8, 16, 32]
    tps = {n: b.output_tps for n, b in sweep.items()}
    assert tps[16] / tps[1] == pytest.approx(10, rel=0.05)
    assert sweep[16].e2e_p50_ms / sweep[1].e2e_p50_ms < 2
    assert tps[32] / tps[16] == pytest.approx(1.2, rel=0.05)
    assert sweep[32].e2e_p99_ms / sweep[16].e2e_p99_ms == pytest.approx(2, rel=0.05)
    adopted = service.experiments.get(verdict=Experiment.Verdict.ADOPTED)
    assert (adopted.value_to, adopted.after) == ("16", sweep[16])
    assert sweep[16].is_current


def test_one_experiment_changed_more_than_the_declared_variable(fleet):
    flagged = [e for e in Experiment.objects.all() if e.more_than_one_variable]
    assert [e.title for e in flagged] == ["Chunked prefill"]


def test_the_fleet_shows_healthy_thin_and_negative_margins(fleet):
    margins = {}
    for service in Service.objects.all():
        current = service.baselines.get(is_current=True)
        margins[service.slug] = current.economics(service).margin
    assert max(margins.values()) > 0.3
    assert any(0 <= m < 0.1 for m in margins.values())
    assert any(m < 0 for m in margins.values())
    h100 = Service.objects.filter(gpu_model__contains="H100")
    assert all(4 <= s.gpu_hour_price <= 10 for s in h100)


def test_running_twice_does_not_duplicate_anything(fleet):
    before = table_counts()
    again = demo.build_demo()
    assert table_counts() == before
    assert again.created == [] and len(again.skipped) == len(demo.BUILDERS)


def test_rebuild_replaces_the_demo_services_without_duplicates(fleet):
    before = table_counts()
    result = demo.build_demo(rebuild=True)
    assert table_counts() == before
    assert sorted(result.created) == sorted(demo.BUILDERS)


def test_demo_users_have_the_documented_logins_and_roles(fleet):
    User = get_user_model()
    user = User.objects.get(username="demo")
    assert user.check_password("perfhub-demo") and not user.is_superuser
    services = Service.objects.all()
    assert all(s.can_edit(user) for s in services)
    assert not Membership.objects.filter(user=user).exclude(role="owner").exists()
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.check_password("perfhub-admin")


def test_existing_users_are_left_alone(db, django_user_model):
    django_user_model.objects.create_user("demo", password="changed-by-the-user")
    demo.build_demo()
    assert django_user_model.objects.get(username="demo").check_password("changed-by-the-user")


def test_the_command_prints_the_demo_login(db, settings):
    settings.DEBUG = True
    out = io.StringIO()
    call_command("seed_demo", "--history-days", "0", stdout=out)
    assert "demo / perfhub-demo" in out.getvalue()


def test_the_command_refuses_demo_users_with_debug_off(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="refusing to create demo users") as caught:
        call_command("seed_demo")
    assert caught.value.returncode == 2
    assert not get_user_model().objects.filter(username="demo").exists()


def test_the_command_creates_them_with_debug_off_when_told(db, settings):
    settings.DEBUG = False
    call_command("seed_demo", "--allow-demo-users", "--history-days", "0", stdout=io.StringIO())
    assert get_user_model().objects.filter(username="demo").exists()


def test_the_deploy_check_fails_while_a_demo_password_works(fleet):
    errors = {e.id: e for e in run_checks(include_deployment_checks=True, tags=["security"])}
    assert "perfhub.E001" in errors
    user = get_user_model().objects.get(username="demo")
    user.set_password("a-private-one-now")
    user.save()
    admin = get_user_model().objects.get(username="admin")
    admin.is_active = False
    admin.save()
    errors = [e for e in run_checks(include_deployment_checks=True) if e.id == "perfhub.E001"]
    assert errors == []


def test_every_demo_dossier_survives_a_markdown_round_trip(fleet):
    for slug, service in fleet.services.items():
        text = export_dossier(service)
        copy = Service.objects.create(
            slug=f"{slug}-copy",
            name="copy",
            team=service.team,
            model_name="m",
            model_params_b=1,
            engine="vllm",
            gpu_model="g",
            gpu_hour_price=1,
        )
        import_dossier(service=copy, text=text, author=None)
        assert export_dossier(copy).replace(f"| slug | {slug}-copy |", f"| slug | {slug} |") == text


def test_latencies_pass_through_the_stated_p50_and_p99():
    values = demo.latencies("e2e", 1000, 3000)
    assert (values["e2e_p50_ms"], values["e2e_p99_ms"]) == (1000, 3000)
    assert values["e2e_p90_ms"] < values["e2e_p95_ms"] < 3000 < values["e2e_p999_ms"]
    assert math.isclose(values["e2e_p90_ms"], 1000 * 3 ** (1.2816 / 2.3263), rel_tol=1e-3)
