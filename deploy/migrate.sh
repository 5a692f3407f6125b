#!/bin/sh
# Apply the database migrations; web, worker and beat start after it succeeds.
# One source for compose's `migrate` service and `make smoke`.
set -eu
exec python manage.py migrate --no-input
