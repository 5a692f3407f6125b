"""Migration dossiers 0012: experiments recorded before it count as last changed when they were
recorded, not when the migration ran (a `changed_after` poll would see every one as new)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from tests.support import migrate, old_service

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("latest_schema_restored"),
]

RECORDED = datetime(2026, 10, 3, 9, 30, tzinfo=UTC)


def test_an_experiment_recorded_before_it_was_last_changed_when_recorded():
    apps = migrate([("dossiers", "0011_slo_kind_registry")])
    service = old_service(apps)
    before = apps.get_model("dossiers", "Baseline").objects.create(
        service=service, label="before", measured_at=RECORDED
    )
    experiments = apps.get_model("dossiers", "Experiment").objects
    experiment = experiments.create(
        service=service, title="x", hypothesis="h", variable_key="k", value_from="1",
        value_to="2", before=before, run_on=date(2026, 10, 3),
    )  # fmt: skip
    experiments.filter(pk=experiment.pk).update(created_at=RECORDED)

    after = migrate([("dossiers", "0012_experiment_updated_at")])
    assert after.get_model("dossiers", "Experiment").objects.get().updated_at == RECORDED
