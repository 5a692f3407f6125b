"""The demo fleet, as data: one Markdown dossier per service under `demo/dossiers/`.

`build_demo()` creates the demo users and teams, then imports each file through the same
parse and apply a user's import goes through (`dossiers.markdown`); a service whose slug
already exists is left alone, or rebuilt with `rebuild=True`. Load-test files beside them
(`demo/loadtests/`) are imported by the `loadtests` app. To change the demo, edit the files
(or change a service in the app and export it over its file).

The files are dated as exported on EXPORTED_ON; the import moves every date by the days since
then, so the fleet's history always ends in the last few days. The seed's three scenarios:
- support-chat-7b: P99 above 8 s at production load while the GPUs were ~30% busy; the engine's
  CPU loop left the GPU idle between decode steps, fixed by multi-step scheduling.
- doc-summarizer: the tokenizer ran serially on the CPU; parallelizing it took P99 from 3 s to
  800 ms.
- code-review-13b: the 13B batch sweep (1 to 32) whose sweet spot is 16.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import transaction
from django.utils import timezone

from dossiers import markdown
from dossiers.markdown.parse import ParsedDossier
from dossiers.models import Membership, Service, Slo, Team

DEMO_DOSSIERS = Path(settings.BASE_DIR) / "demo" / "dossiers"
EXPORTED_ON = dt.date(2026, 12, 1)

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "perfhub-demo"
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "perfhub-admin"

TEAMS = {
    "assistant": "Assistant Platform",
    "knowledge": "Search & Knowledge",
    "trust-safety": "Trust & Safety",
    "localization": "Localization",
}
# Colleagues named in the dossiers (no password: they cannot log in), and their teams.
TEAMMATES = {
    "mei": ("Mei Chen", ("assistant", "knowledge")),
    "arjun": ("Arjun Rao", ("trust-safety", "localization")),
}


@dataclass
class DemoResult:
    services: dict[str, Service] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    demo_user: AbstractUser | None = None
    admin_user: AbstractUser | None = None


def demo_files(folder: Path = DEMO_DOSSIERS) -> list[Path]:
    """The dossier files in import order (their names start with a number: the seed's
    scenarios first, so they get the first demo hosts)."""
    return sorted(folder.glob("*.md"), key=lambda p: (int(p.name.split("-", 1)[0]), p.name))


def demo_slugs(folder: Path = DEMO_DOSSIERS) -> list[str]:
    """The demo services' slugs (from each file's header), sorted."""
    return sorted(
        markdown.parse_dossier(p.read_text(encoding="utf-8")).slug for p in demo_files(folder)
    )


@transaction.atomic
def ensure_demo_users() -> tuple[AbstractUser, AbstractUser, dict[str, Team]]:
    """The demo login, the admin, two teammates and the four teams; existing ones left alone."""
    User = get_user_model()
    demo = User.objects.filter(username=DEMO_USERNAME).first()
    if demo is None:
        demo = User.objects.create_user(
            DEMO_USERNAME, password=DEMO_PASSWORD, first_name="Demo", last_name="Engineer"
        )
    admin = User.objects.filter(username=ADMIN_USERNAME).first()
    if admin is None:
        admin = User.objects.create_superuser(ADMIN_USERNAME, password=ADMIN_PASSWORD)
    teams = {}
    for slug, name in TEAMS.items():
        teams[slug], _ = Team.objects.get_or_create(slug=slug, defaults={"name": name})
        Membership.objects.get_or_create(
            team=teams[slug], user=demo, defaults={"role": Membership.Role.OWNER}
        )
    for username, (full_name, team_slugs) in TEAMMATES.items():
        first, last = full_name.split(" ", 1)
        mate, created = User.objects.get_or_create(
            username=username, defaults={"first_name": first, "last_name": last}
        )
        if created:
            mate.set_unusable_password()
            mate.save(update_fields=["password"])
        for slug in team_slugs:
            Membership.objects.get_or_create(team=teams[slug], user=mate)
    return demo, admin, teams


def build_demo(
    *,
    stdout: TextIO | None = None,
    rebuild: bool = False,
    folder: Path = DEMO_DOSSIERS,
    today: dt.date | None = None,
) -> DemoResult:
    """Import the demo dossiers that are missing (or all of them, with `rebuild`)."""
    result = DemoResult()
    result.demo_user, result.admin_user, teams = ensure_demo_users()
    days = ((today or timezone.localdate()) - EXPORTED_ON).days
    for path in demo_files(folder):
        parsed = markdown.parse_dossier(path.read_text(encoding="utf-8"))
        with transaction.atomic():
            existing = Service.objects.filter(slug=parsed.slug).first()
            if existing is not None and rebuild:
                _delete_service(existing)
                existing = None
            if existing is not None:
                result.services[parsed.slug] = existing
                result.skipped.append(parsed.slug)
                _say(stdout, f"  {parsed.slug}: already there, skipped")
                continue
            result.services[parsed.slug] = markdown.create_from_dossier(
                parsed=shift_dates(parsed, days),
                team=teams[parsed.team],
                author=result.demo_user,
            )
            add_demo_slos(result.services[parsed.slug])
            result.created.append(parsed.slug)
            _say(stdout, f"  {parsed.slug}: imported from {path.name}")
    return result


def add_demo_slos(service: Service) -> None:
    """Each demo service's SLOs: its P99 TTFT and TPOT targets as one per-request objective
    (a request is good when it meets both) for 99% of requests, and 99.5% availability (the
    simulator fails 0.2% of requests), both over 28 days."""
    thresholds = {"ttft_ms": service.slo_p99_ttft_ms, "tpot_ms": service.slo_p99_tpot_ms}
    if any(thresholds.values()):
        Slo.objects.get_or_create(
            service=service,
            name="Interactive latency",
            defaults={**thresholds, "target_percent": 99.0, "window_days": 28},
        )
    Slo.objects.get_or_create(
        service=service,
        name="Availability",
        defaults={"kind": Slo.Kind.AVAILABILITY, "target_percent": 99.5, "window_days": 28},
    )


def shift_dates(parsed: ParsedDossier, days: int) -> ParsedDossier:
    """The same dossier with every date `days` later (the demo keeps its history recent)."""
    if days == 0:
        return parsed
    delta = dt.timedelta(days=days)

    def moved(fields: dict, *names: str) -> dict:
        return {k: v + delta if k in names and v is not None else v for k, v in fields.items()}

    return dataclasses.replace(
        parsed,
        configs=[
            dataclasses.replace(c, created=c.created + delta if c.created else None)
            for c in parsed.configs
        ],
        baselines=[
            dataclasses.replace(b, fields=moved(b.fields, "measured_at")) for b in parsed.baselines
        ],
        bottlenecks=[
            dataclasses.replace(b, fields=moved(b.fields, "identified_on", "resolved_on"))
            for b in parsed.bottlenecks
        ],
        experiments=[
            dataclasses.replace(e, fields=moved(e.fields, "run_on")) for e in parsed.experiments
        ],
    )


def _say(stdout: TextIO | None, text: str) -> None:
    if stdout is not None:
        stdout.write(text + "\n")


def _delete_service(service: Service) -> None:
    # Experiments protect their baselines, so they go first.
    service.experiments.all().delete()
    service.delete()
