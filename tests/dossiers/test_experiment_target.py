"""An experiment's stated target: the figure its card's summary leads with, validated against
what its two baselines measured; without one, the hypothesis still picks the figure."""

import datetime as dt
import re

import pytest
from django.core.exceptions import ValidationError

from dossiers import services
from dossiers.models import Baseline, Experiment
from tests.factories.catalog import baseline_values

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def pair(service, **both):
    """Before and after baselines: throughput up 1,000 -> 2,000 tok/s, every latency 10% lower;
    `both`: values the two share."""
    before = services.baseline_record(
        service=service,
        label="before",
        **baseline_values(measured_at=T0 - dt.timedelta(days=1), output_tps=1000.0, **both),
    )
    after_values = baseline_values(measured_at=T0, output_tps=2000.0, **both)
    for name, value in after_values.items():
        if name.endswith("_ms") and value is not None:
            after_values[name] = value * 0.9
    after = services.baseline_record(service=service, label="after", **after_values)
    return before, after


def record(service, before, after, *, hypothesis="Bigger batches.", target=""):
    return services.experiment_record(
        service=service,
        title="Bigger batch",
        hypothesis=hypothesis,
        target=target,
        variable_key="max_num_seqs",
        value_from="8",
        value_to="16",
        before=before,
        after=after,
        run_on=dt.date(2026, 3, 1),
    )


def test_a_stated_throughput_target_leads_the_headline(service):
    experiment = record(service, *pair(service), target="output_tps")
    h = experiment.headline()
    assert (h.metric, h.delta.before, h.delta.after, h.source) == (
        "output_tps",
        1000.0,
        2000.0,
        "stated",
    )


def test_a_stated_target_overrides_the_figure_the_hypothesis_names(service):
    hypothesis = "Splitting prefills cuts TTFT P99."
    experiment = record(service, *pair(service), hypothesis=hypothesis, target="output_tps")
    assert experiment.headline().metric == "output_tps"


def test_without_a_stated_target_the_hypothesis_still_names_the_figure(service):
    experiment = record(service, *pair(service), hypothesis="Splitting prefills cuts TTFT P99.")
    h = experiment.headline()
    assert (h.metric, h.targeted, h.source) == ("ttft_p99_ms", True, "hypothesis")


def test_a_stated_percentile_with_too_few_requests_shows_a_lower_one_of_the_same_figure(service):
    # 600 requests a side: 6 beyond the P99, fewer than the gate's 10; the P95 has 30.
    h = record(service, *pair(service, request_count=600), target="ttft_p99_ms").headline()
    assert (h.metric, h.replaces, h.targeted, h.source) == (
        "ttft_p95_ms",
        "ttft_p99_ms",
        True,
        "stated",
    )


def test_a_target_the_baselines_did_not_measure_is_refused_naming_the_field(service):
    with pytest.raises(ValidationError) as refused:
        record(service, *pair(service, gpu_util=None), target="gpu_util")
    assert refused.value.message_dict["target"] == [
        "GPU-Util was not measured by the before and after baselines: state a figure both "
        "measured, or leave it blank."
    ]


def test_a_target_only_one_baseline_measured_is_refused_naming_that_one(service):
    before, after = pair(service)
    Baseline.objects.filter(pk=after.pk).update(gpu_util=None)
    after.refresh_from_db()
    with pytest.raises(ValidationError, match="not measured by the after baseline"):
        record(service, before, after, target="gpu_util")


def test_a_pending_experiment_states_its_target_before_the_after_is_measured(service):
    before, _ = pair(service)
    experiment = record(service, before, None, target="output_tps")
    assert Experiment.objects.get(pk=experiment.pk).target == "output_tps"


def test_a_target_no_longer_measured_leads_with_the_default_and_keeps_the_target(service):
    before, after = pair(service)
    experiment = record(service, before, after, target="gpu_util")
    # A baseline corrected after the experiment was recorded: the card must still render.
    Baseline.objects.filter(pk=after.pk).update(gpu_util=None)
    experiment = Experiment.objects.get(pk=experiment.pk)
    h = experiment.headline()
    assert (h.metric, h.targeted, h.target, h.target_unmeasured) == (
        "e2e_p99_ms",
        False,
        "gpu_util",
        True,
    )


def test_the_card_says_a_stated_target_was_not_measured_by_both_baselines(service, client, owner):
    before, after = pair(service)
    record(service, before, after, target="gpu_util")
    Baseline.objects.filter(pk=after.pk).update(gpu_util=None)
    client.force_login(owner)
    page = client.get(service.get_absolute_url()).content.decode()
    summary = re.search(r'<span class="sub" data-headline=.*?</summary>', page, re.S).group(0)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", summary)).strip()
    assert text.startswith("E2E P99 (ms)")
    assert text.endswith("(stated target GPU-Util not measured by both baselines)")


def test_an_unknown_target_is_refused_as_a_choice_not_a_crash(service):
    with pytest.raises(ValidationError) as refused:
        record(service, *pair(service), target="throughput")
    assert list(refused.value.message_dict) == ["target"]
