"""Fixtures for dossier pages: a service with a full dossier (logged-in clients per persona are
in tests/conftest.py, for every folder)."""

from datetime import UTC as _UTC
from datetime import date, datetime, timedelta

import pytest

from dossiers import services
from dossiers.models import Bottleneck, Experiment
from tests.factories.catalog import bare_service, baseline_values

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=_UTC)


@pytest.fixture
def full_dossier(service, owner):
    """The shared `service` with narrative revisions, configs, baselines, a bottleneck and an
    experiment whose configs differ in more than the declared variable."""
    services.narrative_revise(
        service=service, body="# Chat 7B\n\nServes chat.\n", summary="first", author=owner
    )
    services.narrative_revise(
        service=service,
        body="# Chat 7B\n\nServes chat for the support bot.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        summary="say who uses it",
        author=owner,
    )
    v1 = services.config_version_create(
        service=service, config={"max_num_seqs": 8, "dtype": "fp16"}, note="initial", author=owner
    )
    v2 = services.config_version_create(
        service=service,
        config={"max_num_seqs": 16, "dtype": "fp16", "gpu_memory_utilization": 0.95},
        note="bigger batch",
        author=owner,
    )
    before = services.baseline_record(
        service=service,
        label="batch 8",
        config_version=v1,
        **baseline_values(
            measured_at=T0 - timedelta(days=7), output_tps=1000, e2e_p99_ms=3000, e2e_p999_ms=3600
        ),
    )
    after = services.baseline_record(
        service=service,
        label="batch 16",
        config_version=v2,
        make_current=True,
        **baseline_values(),
    )
    bottleneck = Bottleneck.objects.create(
        service=service,
        title="Tokenizer runs serially on the CPU",
        layer=Bottleneck.Layer.SCHEDULING,
        kind=Bottleneck.Kind.CPU,
        symptom="GPU 30% busy while requests queue",
        evidence="py-spy shows the tokenizer on one core",
        status=Bottleneck.Status.CONFIRMED,
        identified_on=date(2026, 2, 20),
    )
    bottleneck.evidence_baselines.set([before])
    experiment = Experiment.objects.create(
        service=service,
        title="Double the batch",
        hypothesis="Throughput grows with batch size until memory bandwidth saturates.",
        variable_key="max_num_seqs",
        value_from="8",
        value_to="16",
        before=before,
        after=after,
        verdict=Experiment.Verdict.ADOPTED,
        run_on=date(2026, 3, 1),
    )
    return {
        "service": service,
        "before": before,
        "after": after,
        "configs": (v1, v2),
        "bottleneck": bottleneck,
        "experiment": experiment,
    }


@pytest.fixture
def blank(team):
    return bare_service(team, "blank")
