"""The Celery app. Broker from REDIS_URL; without it tasks run eagerly (see settings)."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init

from perfhub import logs
from perfhub.gc_freeze import freeze_loaded_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

app = Celery("perfhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["perfhub"])  # perfhub.tasks: the heartbeat /readyz reads

# One JSON line per task run, with its duration and outcome (perfhub/logs.py).
task_prerun.connect(logs.task_started, weak=False)
task_postrun.connect(logs.task_finished, weak=False)


def freeze_before_fork(**_signal) -> int:
    """Move every object the worker's main process has loaded (Django, the task modules) out of
    the garbage collector's reach before it forks its pool; returns how many.

    A forked child shares its parent's memory until it writes to it, and a full collection
    writes to every object it scans: unfrozen, each pool child's first one turned ~60 MB of
    shared pages into its own copies and took ~100 ms. Frozen, the children's collections
    skip them (docs/operations.md, "Workers' memory")."""
    return freeze_loaded_objects()


# In the main process, after the task modules are imported and before the pool starts.
worker_init.connect(freeze_before_fork, weak=False)
