#!/bin/sh
# The Celery worker: roll-ups, pulls, alert evaluation and notifications, retention.
# One source for compose's `worker` service and `make smoke`.
set -eu
exec celery --quiet -A perfhub worker --loglevel "${LOG_LEVEL:-INFO}" \
    --concurrency "${WORKER_CONCURRENCY:-2}"
