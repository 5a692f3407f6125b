import pytest
from django.core.management import call_command


@pytest.fixture
def swept(service, fixtures_dir):
    """The service with a vllm-bench concurrency sweep (1 to 64, 400 requests a point)."""
    path = fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl"
    call_command("import_loadtest", str(path), "--service", service.slug, stdout=None)
    return service
