"""Registry names fit the columns that store them: one length for all, checked at registration."""

import pytest
from django.apps import apps

from alerts import kinds
from analysis.alerting import Direction
from core.names import NAME_MAX_LENGTH, check_name
from dossiers import slo_kinds
from loadtests.formats import LoadTestFormat
from loadtests.formats import register as register_format

# Every column that stores a name some registry hands out.
REGISTRY_COLUMNS = [
    ("collectors", "Host", "pull_kind"),
    ("collectors", "ScrapeWindow", "source"),
    ("collectors", "ScrapeState", "source"),
    ("collectors", "PrometheusSource", "engine"),
    ("alerts", "Receiver", "kind"),
    ("dossiers", "Service", "engine"),
    ("dossiers", "Slo", "kind"),
    ("alerts", "Rule", "kind"),
    ("loadtests", "LoadTest", "format"),
]


@pytest.mark.parametrize(("app", "model", "field"), REGISTRY_COLUMNS)
def test_every_registry_name_column_holds_the_registry_length(app, model, field):
    assert apps.get_model(app, model)._meta.get_field(field).max_length == NAME_MAX_LENGTH


def test_a_name_that_fits_is_returned():
    assert check_name("tensorrt-llm", what="engine") == "tensorrt-llm"


@pytest.mark.parametrize("name", ["", "Upper", "has space", "9lives", "dotted.name", None])
def test_a_misspelt_name_is_refused_naming_what(name):
    with pytest.raises(ValueError, match="engine name"):
        check_name(name, what="engine")


def test_a_load_test_format_name_longer_than_its_column_is_refused():
    fmt = LoadTestFormat(name="x" * 21, label="X", parse=lambda docs: [], signature=("x",))
    with pytest.raises(ValueError, match="holds 20"):
        register_format(fmt)


def test_a_rule_kind_name_longer_than_its_column_is_refused():
    class TooLong(kinds.RuleKind):
        name = "queue_depth_over_the_limit"
        label = "Too long"
        unit = "requests"
        direction = Direction.ABOVE

    with pytest.raises(ValueError, match="holds 20"):
        kinds.register(TooLong)
    assert kinds.get("queue_depth_over_the_limit") is None


def test_an_slo_kind_name_longer_than_its_column_is_refused():
    class TooLong(slo_kinds.SloKind):
        name = "latency_and_availability"
        label = "Too long"

    with pytest.raises(ValueError, match="holds 20"):
        slo_kinds.register(TooLong)
    assert slo_kinds.get("latency_and_availability") is None
