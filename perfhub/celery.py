"""The Celery app. Broker from REDIS_URL; without it tasks run eagerly (see settings)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

app = Celery("perfhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
