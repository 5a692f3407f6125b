"""The dossier: services and what people measure, write and decide about them.

Invariants live in the database (named constraints); cross-field rules in `clean()`;
the arithmetic (cost, margin, deltas) in the Django-free `analysis` package.

One module an area; everything is re-exported here, so `from dossiers.models import X` and
the migrations' `dossiers.models.<callable>` paths keep working. The imports run in the order
the models were declared in the single module this was, so Django registers them in that order.
"""

from analysis.percentiles import LATENCY_FIELDS, LATENCY_METRICS, PERCENTILE_LABELS
from analysis.runs import ENVIRONMENT_FIELDS, RESOURCE_FIELDS, THROUGHPUT_FIELDS, WORKLOAD_FIELDS

# Declaration order (see above), not sorted:
# isort: off
from dossiers.models.team import Membership, Team
from dossiers.models.service import Service, ServiceQuerySet, engine_choices, use_engine_labels
from dossiers.models.slo import Slo, _percent_between_50_and_100
from dossiers.models.revisions import ConfigVersion, NarrativeRevision
from dossiers.models.runs import (
    LATENCY_FIELD_NAMES,
    PERCENTILES,
    RUN_FIELD_NAMES,
    Baseline,
    GpuSource,
    MeasuredRun,
)
from dossiers.models.bottlenecks import Bottleneck
from dossiers.models.experiments import Experiment
# isort: on

__all__ = [
    "ENVIRONMENT_FIELDS",
    "LATENCY_FIELDS",
    "LATENCY_FIELD_NAMES",
    "LATENCY_METRICS",
    "PERCENTILES",
    "PERCENTILE_LABELS",
    "RESOURCE_FIELDS",
    "RUN_FIELD_NAMES",
    "THROUGHPUT_FIELDS",
    "WORKLOAD_FIELDS",
    "Baseline",
    "Bottleneck",
    "ConfigVersion",
    "Experiment",
    "GpuSource",
    "MeasuredRun",
    "Membership",
    "NarrativeRevision",
    "Service",
    "ServiceQuerySet",
    "Slo",
    "Team",
    "_percent_between_50_and_100",
    "engine_choices",
    "use_engine_labels",
]
