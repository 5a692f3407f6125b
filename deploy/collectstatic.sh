#!/bin/sh
# Collect the static files gunicorn serves (the image runs it at build, `make smoke` before web).
set -eu
exec python manage.py collectstatic --no-input --verbosity 0
