import pytest
from django.core.management import call_command

from dossiers.models import Experiment


@pytest.fixture
def swept(service, fixtures_dir):
    """The service with a vllm-bench concurrency sweep (1 to 64, 400 requests a point)."""
    path = fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl"
    call_command("import_loadtest", str(path), "--service", service.slug, stdout=None)
    return service


@pytest.fixture
def chat(demo_fleet):
    """The demo's support-chat-7b: two configurations swept, one carrying a reverted change."""
    return demo_fleet.services["support-chat-7b"]


@pytest.fixture
def reverted(chat):
    """The experiment that turned max_num_seqs=512 back (its sweep is the chat's second)."""
    return chat.experiments.get(verdict=Experiment.Verdict.REVERTED, variable_key="max_num_seqs")
