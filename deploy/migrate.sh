#!/bin/sh
# Apply the database migrations; web, worker and beat start after it succeeds.
# One source for compose's `migrate` service and `make smoke`.
set -eu
python manage.py migrate --no-input
# What the deployment should fix (SITE_URL left at loopback, a demo password, missing HTTPS
# settings), in the migrate service's log on every deploy; not fatal, the stack still starts.
python manage.py check --deploy --fail-level CRITICAL
