"""Links from a dossier's baselines and experiments to where they were measured, given by the
apps above `dossiers`, which it may not import (.importlinter): `loadtests` knows the load test
a baseline was promoted from, and that two of its runs can be compared through the release
gate. An app registers an instance of its `Provenance` (`register(MyLinks())`) when its
`AppConfig.ready` runs; the dossier's pages ask every registered one, once a page, for all the
baselines or experiments they show."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.registry import InstanceRegistry
from dossiers.models import Baseline, Experiment, Service


@dataclass(frozen=True)
class Link:
    text: str
    url: str


class Provenance:
    """One app's links. Each method answers for a whole page in a few queries: pk -> link."""

    name: str

    def for_baselines(self, baselines: Sequence[Baseline]) -> Mapping[int, Link]:
        return {}

    def for_experiments(
        self, service: Service, experiments: Sequence[Experiment]
    ) -> Mapping[int, Link]:
        return {}


PROVIDERS: InstanceRegistry[Provenance] = InstanceRegistry("provenance")
register = PROVIDERS.register


def baseline_links(baselines: Sequence[Baseline]) -> dict[int, list[Link]]:
    """Baseline pk -> the links every provider gives it (none: absent)."""
    found: dict[int, list[Link]] = {}
    if baselines:
        for provider in PROVIDERS.values():
            for pk, link in provider.for_baselines(baselines).items():
                found.setdefault(pk, []).append(link)
    return found


def experiment_links(service: Service, experiments: Sequence[Experiment]) -> dict[int, list[Link]]:
    """Experiment pk -> the links every provider gives it (none: absent)."""
    found: dict[int, list[Link]] = {}
    if experiments:
        for provider in PROVIDERS.values():
            for pk, link in provider.for_experiments(service, experiments).items():
                found.setdefault(pk, []).append(link)
    return found
