"""Objectives in the `ttft_p99_ms=500` form, and a service's default objectives."""

import pytest

from planning.objectives import ObjectiveError, parse_objectives, service_objectives


def test_objectives_are_read_from_name_equals_milliseconds():
    (objective,) = parse_objectives(["ttft_p99_ms=500"])
    assert (objective.metric, objective.percentile, objective.limit_ms) == ("ttft", "p99", 500)


def test_the_stricter_of_two_limits_on_one_percentile_stands():
    (objective,) = parse_objectives(["tpot_p99_ms=50, tpot_p99_ms=40"])
    assert objective.limit_ms == 40


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("ttft_p99_ms", "NAME=MS"),
        ("latency_p99_ms=5", "metric must be one of"),
        ("ttft_p42_ms=5", "percentile must be one of"),
        ("ttft_p99_ms=fast", "'fast' is not a number"),
        ("ttft_p99_ms=-5", "positive"),
    ],
)
def test_a_bad_objective_is_refused_saying_what_is_wrong(text, names):
    with pytest.raises(ObjectiveError, match=names):
        parse_objectives([text])


def test_a_service_plans_for_its_own_slo_by_default(service):
    names = {o.name: o.limit_ms for o in service_objectives(service)}
    assert names == {"ttft_p99_ms": 500, "tpot_p99_ms": 50, "e2e_p99_ms": 2000}


@pytest.mark.django_db
def test_an_slo_object_is_planned_for_at_the_percentile_its_target_names(service):
    from dossiers.models import Slo

    Slo.objects.create(service=service, name="Chat", ttft_ms=400, target_percent=99.5)
    objectives = {o.name: o.limit_ms for o in service_objectives(service)}
    assert objectives["ttft_p999_ms"] == 400  # 99.5% of requests: held at the stricter P99.9


def test_an_objective_reads_its_limit_with_thousands_separated():
    (objective,) = parse_objectives(["e2e_p99_ms=12000"])
    assert objective.label == "E2E P99 ≤ 12,000 ms"
