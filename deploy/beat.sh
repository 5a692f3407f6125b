#!/bin/sh
# Celery beat: schedules the periodic tasks (settings.CELERY_BEAT_SCHEDULE). Run exactly one.
# One source for compose's `beat` service and `make smoke`. Its schedule file is disposable.
set -eu
var="${PERFHUB_VAR_DIR:-var}"
mkdir -p "$var"
exec celery --quiet -A perfhub beat --loglevel "${LOG_LEVEL:-INFO}" \
    --schedule "$var/celerybeat-schedule"
