"""docs/extending.md, "A load-test file format", followed literally: the block as a module in
the formats folder, discovered, detected from content and imported."""

import json

import numpy as np
import pytest
from django.urls import reverse

from loadtests import formats
from loadtests.importing import import_loadtest_file
from loadtests.models import LoadTestSketch
from tests.extending_doc import module_from_doc

pytestmark = pytest.mark.django_db

E2E_S = list(np.random.default_rng(7).lognormal(0, 0.4, 400))
CONTENT = json.dumps(
    {
        "mytool_version": "1.2",
        "completed": 400,
        "duration_s": 80.0,
        "concurrency": 8,
        "requests": [{"ttft_s": e2e / 10, "e2e_s": e2e} for e2e in E2E_S],
    }
).encode()


@pytest.fixture
def mytool(tmp_path):
    with module_from_doc("A load-test file format", tmp_path, lambda: formats.unregister("mytool")):
        yield formats.get_format("mytool")


def test_the_documented_format_is_detected_from_content(mytool):
    assert formats.parse_loadtest(CONTENT, filename="results.json")[0].format == "mytool"


def test_the_documented_format_is_tried_after_the_built_ins(mytool):
    assert formats.format_names()[-1] == "mytool"


def test_an_imported_run_takes_its_percentiles_from_the_per_request_arrays(service, mytool):
    run = import_loadtest_file(service=service, content=CONTENT, filename="results.json")[0]
    assert run.e2e_p99_ms == pytest.approx(np.quantile(E2E_S, 0.99) * 1000, rel=0.02)


def test_an_imported_run_stores_a_sketch_per_family(service, mytool):
    run = import_loadtest_file(service=service, content=CONTENT, filename="results.json")[0]
    counts = dict(LoadTestSketch.objects.filter(load_test=run).values_list("family", "count"))
    assert counts == {"ttft": 400, "e2e": 400}


def test_a_bad_request_in_the_documented_format_is_named(mytool):
    bad = json.loads(CONTENT)
    bad["requests"][3] = {"ttft_s": 0.1}
    with pytest.raises(formats.LoadTestFormatError, match=r"requests\[3\]: missing key 'e2e_s'"):
        formats.parse_loadtest(json.dumps(bad))


def test_the_load_tests_page_names_the_added_tool_among_those_it_reads(
    mytool, owner_client, service
):
    page = owner_client.get(reverse("loadtests:list", args=[service.slug])).content.decode()
    assert "AIPerf" in page and mytool.label in page
