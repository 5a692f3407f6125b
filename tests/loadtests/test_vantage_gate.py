"""The gate judges load-test files (client-side) only against client-side baselines."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from dossiers.models import Baseline

pytestmark = pytest.mark.django_db


def test_a_server_side_baseline_is_never_a_gate_reference(service, fixtures_dir):
    c16 = fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json"
    call_command("import_loadtest", str(c16), "--service", service.slug, "--baseline")
    # The same shape, but measured by the engine (as a baseline recorded from live scrapes is).
    Baseline.objects.filter(service=service).update(vantage="server")
    with pytest.raises(CommandError, match="no baseline") as caught:
        call_command("perf_gate", "--service", service.slug, str(c16), stdout=StringIO())
    assert caught.value.returncode == 2
