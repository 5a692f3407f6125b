"""The demo fleet from `demo/`: the seed's three scenarios, consistent data, idempotent loading.

Read-only tests share one fleet imported once for the module (`demo_fleet`, tests/conftest.py);
what a test changes rolls back after it.
"""

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.core.checks import run_checks

from dossiers import demo
from dossiers.markdown import export_dossier, import_dossier
from dossiers.models import (
    PERCENTILES,
    Baseline,
    Bottleneck,
    ConfigVersion,
    Experiment,
    Membership,
    Service,
)
from loadtests.demo import add_demo_loadtests
from loadtests.models import LoadTest, source_run
from tests.factories.catalog import bare_service


@pytest.fixture
def fleet(demo_fleet, db):
    return demo_fleet


def table_counts():
    models = (Service, Baseline, Bottleneck, Experiment, ConfigVersion, Membership, LoadTest)
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


def test_every_service_says_whom_to_call(fleet):
    for service in Service.objects.all():
        assert service.owner and service.on_call and service.channel, service.slug
        assert service.runbook_url.startswith("https://"), service.slug


def test_every_baseline_has_a_consistent_latency_distribution(fleet):
    # The seed's baselines carry every figure; runs promoted from load tests carry what their
    # file does: the nightly runs (the gate's reference) no P99.9 and no GPU figures, the
    # rate sweep's runs (the recorded experiment) P50, P90 and P99.
    for b in Baseline.objects.all():
        least = 4 if source_run(b) is None else 3
        for metric in ("e2e", "ttft", "tpot"):
            values = [v for p in PERCENTILES if (v := b.latency(metric, p)) is not None]
            assert len(values) >= least and values == sorted(values), (b.label, metric)
        for p in PERCENTILES:
            if b.latency("ttft", p) is not None:
                assert b.latency("e2e", p) >= b.latency("ttft", p), (b.label, p)
        assert b.output_tps == pytest.approx(b.qps * b.output_tokens_mean, rel=0.01)
        if source_run(b) is None:
            assert 0 <= b.gpu_util <= 1 and 0 <= b.sm_active <= b.gpu_util


def test_a_config_version_is_dated_at_the_experiment_that_produced_it(fleet):
    for experiment in Experiment.objects.exclude(after=None).select_related("after"):
        config = experiment.after.config_version
        if config is None or config == experiment.before.config_version:
            continue
        assert config.created_at.date() == experiment.run_on, experiment.title
        assert config.created_at <= experiment.after.measured_at, experiment.title


def test_the_history_ends_in_the_last_days(fleet):
    newest = Baseline.objects.order_by("-measured_at").first().measured_at
    today = dt.datetime.now(dt.UTC)
    assert dt.timedelta(0) < today - newest < dt.timedelta(days=30)


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


def test_the_13b_service_has_its_load_test_sweep_from_a_real_format_file(fleet):
    runs = LoadTest.objects.filter(service__slug="code-review-13b").exclude(
        label__contains="nightly"
    )
    assert sorted(runs.values_list("concurrency", flat=True)) == [1, 2, 4, 8, 16, 32, 64]
    assert set(runs.values_list("format", "origin")) == {("vllm-bench", "demo")}


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
    assert again.created == [] and sorted(again.skipped) == demo.demo_slugs()


def test_rebuild_replaces_the_demo_services_without_duplicates(fleet):
    before = table_counts()
    result = demo.build_demo(rebuild=True)
    add_demo_loadtests(result.services.values())  # as `seed_demo --rebuild` does
    assert table_counts() == before
    assert sorted(result.created) == demo.demo_slugs()


def test_demo_users_have_the_documented_logins_and_roles(fleet):
    User = get_user_model()
    user = User.objects.get(username="demo")
    assert user.check_password("perfhub-demo") and not user.is_superuser
    services = Service.objects.all()
    assert all(s.can_edit(user) for s in services)
    assert not Membership.objects.filter(user=user).exclude(role="owner").exists()
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.check_password("perfhub-admin")


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
        copy = bare_service(service.team, f"{slug}-copy", name="copy", engine="vllm", gpu_model="g")
        import_dossier(service=copy, text=text, author=None, rename=True)
        # the same text, but for the slug: in the header and in the links to the live pages
        expected = text.replace(f"service: {slug}", f"service: {slug}-copy")
        assert export_dossier(copy) == expected.replace(f"/{slug}/", f"/{slug}-copy/")
