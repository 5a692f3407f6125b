"""The Celery app. Broker from REDIS_URL; without it tasks run eagerly (see settings)."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

from perfhub import logs

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

app = Celery("perfhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["perfhub"])  # perfhub.tasks: the heartbeat /readyz reads

# One JSON line per task run, with its duration and outcome (perfhub/logs.py).
task_prerun.connect(logs.task_started, weak=False)
task_postrun.connect(logs.task_finished, weak=False)
