"""The dossier's model rules: one-variable flag, current uniqueness, economics, validation."""

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from dossiers import services
from dossiers.models import Baseline, Bottleneck, ConfigVersion, Experiment

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def record(service, label, *, config=None, current=False, **fields):
    values = {"measured_at": T0, "output_tps": 2000.0, "e2e_p99_ms": 1000.0}
    values.update(fields)
    return services.baseline_record(
        service=service, label=label, config_version=config, make_current=current, **values
    )


def experiment(service, before, after, key="max_num_seqs"):
    return Experiment.objects.create(
        service=service,
        title="Bigger batch",
        hypothesis="More sequences per step",
        variable_key=key,
        value_from="8",
        value_to="16",
        before=before,
        after=after,
        run_on=dt.date(2026, 3, 1),
    )


def configs(service, before: dict, after: dict):
    v1 = services.config_version_create(service=service, config=before)
    v2 = services.config_version_create(service=service, config=after)
    return v1, v2


def test_it_flags_an_experiment_whose_configs_differ_beyond_the_declared_key(service):
    v1, v2 = configs(
        service,
        {"max_num_seqs": 8, "gpu_memory_utilization": 0.9},
        {"max_num_seqs": 16, "gpu_memory_utilization": 0.95},
    )
    e = experiment(service, record(service, "a", config=v1), record(service, "b", config=v2))
    assert e.more_than_one_variable is True
    assert e.other_changed_keys() == ["gpu_memory_utilization"]


def test_it_does_not_flag_an_experiment_when_only_the_declared_key_differs(service):
    v1, v2 = configs(
        service,
        {"max_num_seqs": 8, "gpu_memory_utilization": 0.9},
        {"max_num_seqs": 16, "gpu_memory_utilization": 0.9},
    )
    e = experiment(service, record(service, "a", config=v1), record(service, "b", config=v2))
    assert e.more_than_one_variable is False
    assert e.other_changed_keys() == []


def test_it_compares_nested_keys_by_their_dotted_name(service):
    v1, v2 = configs(
        service, {"scheduler": {"max_num_seqs": 8}}, {"scheduler": {"max_num_seqs": 16}}
    )
    e = experiment(
        service,
        record(service, "a", config=v1),
        record(service, "b", config=v2),
        key="scheduler.max_num_seqs",
    )
    assert e.more_than_one_variable is False


def test_the_flag_is_unknown_when_a_baseline_has_no_config(service):
    v1 = services.config_version_create(service=service, config={"max_num_seqs": 8})
    e = experiment(service, record(service, "a", config=v1), record(service, "b"))
    assert e.other_changed_keys() is None
    assert e.more_than_one_variable is False


def test_the_database_refuses_a_second_current_baseline(service):
    record(service, "a", current=True)
    second = record(service, "b")
    with pytest.raises(IntegrityError), transaction.atomic():
        Baseline.objects.filter(pk=second.pk).update(is_current=True)


def test_promoting_a_baseline_moves_the_current_flag(service):
    first = record(service, "a", current=True)
    second = record(service, "b")
    services.baseline_promote(baseline=second)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.is_current, second.is_current) == (False, True)


def test_the_database_refuses_a_second_current_config(service):
    services.config_version_create(service=service, config={"a": 1})
    second = services.config_version_create(service=service, config={"a": 2}, make_current=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        ConfigVersion.objects.filter(pk=second.pk).update(is_current=True)


def test_baseline_economics_reproduce_the_seed_example(service):
    # Seed: 10 per GPU-hour, 1 GPU, 2,000 output tokens/s, price 5 per Mtok.
    baseline = record(service, "seed", output_tps=2000.0)
    economics = baseline.economics(service)
    assert round(economics.cost_per_mtok, 2) == 1.39
    assert round(economics.margin_percent) == 72


def test_economics_on_input_plus_output_tokens_count_both(service):
    service.token_basis = "total"
    service.price_per_mtok = Decimal("5")
    baseline = record(service, "seed", output_tps=1000.0, input_tps=1000.0)
    assert round(baseline.economics(service).cost_per_mtok, 2) == 1.39


def test_experiment_deltas_go_from_before_to_after(service):
    before = record(service, "a", output_tps=1000.0, e2e_p99_ms=3000.0)
    after = record(service, "b", output_tps=1500.0, e2e_p99_ms=1500.0)
    deltas = {d.metric: d for d in experiment(service, before, after).deltas()}
    assert deltas["output_tps"].relative == pytest.approx(0.5)
    assert deltas["output_tps"].improved is True
    assert deltas["e2e_p99_ms"].relative == pytest.approx(-0.5)
    assert deltas["e2e_p99_ms"].improved is True


def test_an_experiment_without_an_after_baseline_has_no_deltas(service):
    e = experiment(service, record(service, "a"), None)
    assert e.deltas() == []


def test_clean_rejects_a_ratio_above_one(service):
    with pytest.raises(ValidationError) as excinfo:
        record(service, "bad", gpu_util=97.0)
    assert "gpu_util" in excinfo.value.message_dict


RESOLVED_BEFORE_IDENTIFIED = {
    "title": "Tokenizer",
    "layer": Bottleneck.Layer.FRAMEWORK,
    "kind": Bottleneck.Kind.CPU,
    "symptom": "GPU waits",
    "identified_on": dt.date(2026, 3, 10),
    "resolved_on": dt.date(2026, 3, 1),
}


def test_clean_rejects_a_bottleneck_resolved_before_it_was_identified(service):
    bottleneck = Bottleneck(service=service, **RESOLVED_BEFORE_IDENTIFIED)
    with pytest.raises(ValidationError) as excinfo:
        bottleneck.full_clean()
    assert "resolved_on" in excinfo.value.message_dict


def test_the_database_refuses_a_bottleneck_resolved_before_it_was_identified(service):
    with pytest.raises(IntegrityError), transaction.atomic():
        Bottleneck.objects.create(service=service, **RESOLVED_BEFORE_IDENTIFIED)
