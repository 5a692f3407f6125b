"""gunicorn settings for deploy/web.sh: its own lines as JSON, like the application's.

No access log: perfhub.logs.RequestLogMiddleware writes one line per request, with its
duration and outcome.
"""

accesslog = None
errorlog = "-"
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "perfhub.logs.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"level": "INFO", "handlers": ["console"]},
    "loggers": {"gunicorn.error": {"level": "INFO", "handlers": ["console"], "propagate": False}},
}
# Probes and agents keep connections short; a slow client must not hold a worker forever.
timeout = 60
graceful_timeout = 20
