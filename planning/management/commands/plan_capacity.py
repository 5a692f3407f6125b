"""manage.py plan_capacity --service SLUG [--slo ttft_p99_ms=500 ...] [--load R | --growth X]
[--at-concurrency N | --at-rate R] [--headroom H] [--sweep RUN] [--json]

The capacity plan (planning.plan): per-replica highest load meeting the objectives with its 80%
interval and the binding objective, replicas, GPUs, cost per month and margin. Objectives
default to the service's SLOs; the load to the live peak (95th percentile of hourly request
rates over 28 days) times --growth. The sweep is the service's fullest, or with --sweep the one
holding that run (a service measured in several configurations has a sweep for each). Exit 0
with the plan, 2 with one line when the service has no usable sweep (or none holding that run)
or an argument is wrong.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from loadtests.management.commands.import_loadtest import one_line, service_named
from planning.objectives import ObjectiveError, parse_objectives
from planning.plan import PlanError, plan_for
from planning.text import plan_lines

EXIT_BAD_INPUT = 2


class Command(BaseCommand):
    help = "Capacity plan of a service at its SLO: replicas, GPUs and cost, with intervals."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--service", required=True, help="The service's slug.")
        parser.add_argument(
            "--slo",
            action="append",
            default=[],
            metavar="NAME=MS",
            help="An objective, e.g. ttft_p99_ms=500 (repeatable); default: the service's SLOs.",
        )
        load = parser.add_mutually_exclusive_group()
        load.add_argument("--load", type=float, metavar="REQ_PER_S", help="Load to plan for.")
        load.add_argument(
            "--growth",
            type=float,
            default=1.0,
            metavar="X",
            help="Multiply the live peak by X (default 1).",
        )
        at = parser.add_mutually_exclusive_group()
        at.add_argument("--at-concurrency", type=float, metavar="N")
        at.add_argument("--at-rate", type=float, metavar="R")
        parser.add_argument("--headroom", type=float, help="Share of each replica kept free.")
        parser.add_argument(
            "--sweep",
            type=int,
            metavar="RUN",
            help="Plan from the sweep holding this run id (default: the fullest sweep).",
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args, **options) -> None:
        service = service_named(options["service"])
        try:
            objectives = parse_objectives(options["slo"]) if options["slo"] else None
            plan = plan_for(
                service,
                objectives=objectives,
                load=options["load"],
                growth=options["growth"] if options["load"] is None else 1.0,
                spare=options["headroom"],
                at_concurrency=options["at_concurrency"],
                at_rate=options["at_rate"],
                sweep_of=options["sweep"],
            )
        except (ObjectiveError, PlanError) as exc:
            raise CommandError(one_line(str(exc)), returncode=EXIT_BAD_INPUT) from exc
        if options["json"]:
            self.stdout.write(json.dumps(plan.to_dict()))
        else:
            self.stdout.write("\n".join(plan_lines(plan)))
