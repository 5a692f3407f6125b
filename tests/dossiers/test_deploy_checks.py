"""`manage.py check --deploy`: SITE_URL must be an address the links' readers can open."""

import pytest
from django.core.checks import run_checks


def site_url_warnings() -> list:
    return [e for e in run_checks(include_deployment_checks=True) if e.id == "perfhub.W001"]


@pytest.mark.parametrize(
    "site_url", ["http://127.0.0.1:8000", "http://localhost:8000/", "http://[::1]/", "perfhub"]
)
def test_a_site_url_nobody_else_can_open_is_warned_about(settings, db, site_url):
    settings.SITE_URL = site_url
    (warning,) = site_url_warnings()
    assert site_url in warning.msg


def test_a_public_site_url_passes(settings, db):
    settings.SITE_URL = "https://perfhub.example.com"
    assert site_url_warnings() == []


def test_the_warning_is_only_for_deployments(settings, db):
    settings.SITE_URL = "http://127.0.0.1:8000"  # the default, right for `make run`
    assert [e for e in run_checks() if e.id == "perfhub.W001"] == []
