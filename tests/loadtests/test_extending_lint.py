"""docs/extending.md, "A load-test lint check", followed literally: the block as a module in the
checks folder, discovered, and run on every import."""

import pytest

from loadtests import lint
from loadtests.importing import import_loadtest_file
from tests.extending_doc import module_from_doc
from tests.support import VLLM, VLLM_ARRAYS

pytestmark = pytest.mark.django_db


@pytest.fixture
def few_requests(tmp_path):
    with module_from_doc(
        "A load-test lint check", tmp_path, lambda: lint.unregister("few_requests")
    ):
        yield


def checks_found(service, path) -> list[str]:
    (run,) = import_loadtest_file(service=service, content=path.read_bytes(), filename=path.name)
    return [finding["check"] for finding in run.lint]


def test_the_documented_check_is_discovered_and_listed_after_the_built_ins(few_requests):
    assert lint.check_names()[-1] == "few_requests"


def test_the_documented_check_warns_on_an_import_of_8_requests(few_requests, service):
    assert "few_requests" in checks_found(service, VLLM)


def test_the_documented_check_stays_quiet_on_400_requests(few_requests, service):
    assert "few_requests" not in checks_found(service, VLLM_ARRAYS)
