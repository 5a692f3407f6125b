#!/bin/sh
# The web process: gunicorn serving PerfHub and its collected static files (WhiteNoise).
# One source for compose's `web` service and `make smoke`; configured by the environment.
set -eu
exec gunicorn perfhub.wsgi:application --config deploy/gunicorn.conf.py \
    --bind "${BIND:-0.0.0.0:8000}" --workers "${WEB_WORKERS:-3}"
