"""System checks for the load-test settings: a bad `PERFHUB_LINT` fails at start-up (`manage.py
check`, every command), never as an error on the first import."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from loadtests.lint.thresholds import Thresholds


@register()
def check_lint_thresholds(app_configs=None, **kwargs) -> list[Error]:
    overrides = getattr(settings, "PERFHUB_LINT", None)
    if overrides is not None and not isinstance(overrides, dict):
        return [Error("PERFHUB_LINT must be a JSON object of thresholds", id="loadtests.E001")]
    try:
        Thresholds.with_overrides(overrides)
    except ValueError as exc:
        return [Error(str(exc), hint="docs/lint.md lists the thresholds", id="loadtests.E001")]
    return []
