"""PerfHub settings: one file, driven by the environment.

Unset, everything falls back to the embedded default (docs/operations.md): a SQLite file
under var/, Celery tasks run eagerly in-process. Production sets DATABASE_URL, REDIS_URL,
SECRET_KEY and ALLOWED_HOSTS.
"""

import json
import os
import secrets
from pathlib import Path

import dj_database_url
import plotly

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PERFHUB_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return default if value in (None, "") else float(value)


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _secret_key() -> str:
    """SECRET_KEY from the environment; in the embedded default, one made once and kept in var/."""
    if key := os.environ.get("SECRET_KEY"):
        return key
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "core",
    "dossiers",
    "loadtests",
    "collectors",
    "alerts",
    "planning",
    "dashboards",
]

# Every login form calls authenticate(): the backend counts the attempt per client address and
# per account (PERFHUB_THROTTLE_LOGIN each) before trying the password (core.accounts).
AUTHENTICATION_BACKENDS = ["core.accounts.ThrottledModelBackend"]

MIDDLEWARE = [
    "perfhub.logs.RequestLogMiddleware",  # first: its line times everything below
    "django.middleware.security.SecurityMiddleware",
    "core.api.ApiBodyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core.accounts.LoginThrottleMiddleware",  # a login over the limit: 429 + Retry-After
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "collectors.middleware.IngestMetricsMiddleware",
    "csp.middleware.CSPMiddleware",
]

ROOT_URLCONF = "perfhub.urls"
WSGI_APPLICATION = "perfhub.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL selects PostgreSQL (psycopg 3); unset means a SQLite file under var/.
if database_url := env_str("DATABASE_URL"):
    # Health checks: a connection kept from an earlier request is tested before reuse, so a
    # restarted PostgreSQL costs a reconnect, not a 500 per process (`make chaos` restarts it).
    # The engine is Django's own with a cheaper health check (perfhub/postgresql/base.py).
    DATABASES = {
        "default": dj_database_url.parse(database_url, conn_max_age=60, conn_health_checks=True)
    }
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"]["ENGINE"] = "perfhub.postgresql"
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "perfhub.sqlite3",
            # IMMEDIATE: a writer takes the lock when its transaction starts, so the demo's
            # concurrent writers (ingest, roll-ups) wait for it instead of failing mid-way
            # with "database is locked".
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
FORMAT_MODULE_PATH = ["perfhub.formats"]  # dates as 2026-12-01 04:57 UTC everywhere

STATIC_URL = "/static/"
# plotly.js is served from the copy bundled inside the plotly package (no CDN, nothing vendored):
# templates load it as {% static 'plotly/plotly.min.js' %}.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("plotly", Path(plotly.__file__).resolve().parent / "package_data"),
]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("STATIC_MANIFEST", False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Upload and ingest size limits (docs/operations.md, "Settings").
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
PERFHUB_INGEST_MAX_BYTES = env_int("PERFHUB_INGEST_MAX_BYTES", 5 * 1024 * 1024)
PERFHUB_RAW_RETENTION_DAYS = env_int("PERFHUB_RAW_RETENTION_DAYS", 14)
# Any /api/ body (Content-Length or counted while reading a chunked one); JSON nesting depth.
PERFHUB_API_MAX_BYTES = env_int("PERFHUB_API_MAX_BYTES", 50 * 1024 * 1024)
PERFHUB_API_MAX_JSON_DEPTH = env_int("PERFHUB_API_MAX_JSON_DEPTH", 32)
# Ingest acceptance window: every timestamp in a batch within now - MAX_AGE .. now + MAX_AHEAD.
PERFHUB_INGEST_MAX_AGE_S = env_int("PERFHUB_INGEST_MAX_AGE_S", 7 * 24 * 3600)
PERFHUB_INGEST_MAX_AHEAD_S = env_int("PERFHUB_INGEST_MAX_AHEAD_S", 10 * 60)
# Pushes per host (collectors.api_views.IngestThrottle, in the shared cache); an agent pushes
# every 10 s and replays its spool after an outage. PERFHUB_THROTTLE_INGEST is its old name.
PERFHUB_INGEST_RATE = env_str("PERFHUB_INGEST_RATE", env_str("PERFHUB_THROTTLE_INGEST", "120/min"))

REST_FRAMEWORK = {
    # Each token kind recognizes its own prefix (pha_ agent, phc_ CI); a Token header none
    # recognizes is refused (401), not taken for "no credentials". Tokens come first so a
    # missing or revoked one answers 401 with WWW-Authenticate: Token; sessions follow.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "collectors.authentication.AgentTokenAuthentication",
        "loadtests.authentication.CITokenAuthentication",
        "core.credentials.UnrecognizedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": [
        "core.api.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    # Rate limits (core.throttling), counted on the cache below: per token for the CI
    # endpoints, per client address for login attempts (ingest: PERFHUB_INGEST_RATE, per
    # host). Over the rate: 429 + Retry-After.
    "DEFAULT_THROTTLE_RATES": {
        "loadtests": env_str("PERFHUB_THROTTLE_LOADTESTS", "60/min"),
        "gate": env_str("PERFHUB_THROTTLE_GATE", "30/min"),
        "login": env_str("PERFHUB_THROTTLE_LOGIN", "10/min"),
    },
    # Client addresses for the login limit: X-Forwarded-For is trusted only behind our proxy
    # (one hop); otherwise a client could name any address and dodge the limit.
    "NUM_PROXIES": 1 if env_bool("BEHIND_PROXY") else 0,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "PerfHub API",
    "DESCRIPTION": "Ingest from GPU-host agents, load tests, the release gate, metrics.",
    "VERSION": "1.0.0",
    # Swagger UI from drf-spectacular-sidecar's copy, served as a static file (no CDN), and
    # no call to the public validator.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}
# /api/docs/ and /api/schema/ need a login unless this is set.
PERFHUB_PUBLIC_API_DOCS = env_bool("PERFHUB_PUBLIC_API_DOCS", False)

# Content-Security-Policy on every page (django-csp): scripts and everything else from this
# origin only, so no inline script runs. Styles allow inline because plotly.js sets them.
# Redoc renders its search in a worker it builds from a blob: URL.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Outbound requests (webhooks, pulls, Prometheus sources) refuse loopback, private,
# link-local, metadata and other non-global addresses, after DNS resolution and on every
# redirect (core.outbound), except inside these CIDR blocks (e.g. "10.0.0.0/8").
PERFHUB_OUTBOUND_ALLOW_CIDRS = env_list("PERFHUB_OUTBOUND_ALLOW_CIDRS")

# Celery: REDIS_URL selects the broker; unset, tasks run eagerly in-process.
REDIS_URL = env_str("REDIS_URL")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TIMEZONE = TIME_ZONE
# The task logs are perfhub's JSON lines (see LOGGING), not Celery's own format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Intervals in seconds; the environment may shorten them (`make smoke` does).
CELERY_BEAT_SCHEDULE: dict = {
    # Each due pull target becomes its own task (collectors.tasks.pull_host).
    "collectors-schedule-pulls": {
        "task": "collectors.tasks.schedule_pulls",
        "schedule": env_float("PERFHUB_PULLS_EVERY_S", 15.0),
    },
    "collectors-rollup": {
        "task": "collectors.tasks.rollup_pending",
        "schedule": env_float("PERFHUB_ROLLUP_EVERY_S", 60.0),
    },
    "collectors-prune": {
        "task": "collectors.tasks.prune",
        "schedule": env_float("PERFHUB_PRUNE_EVERY_S", 24 * 3600.0),
    },
    "collectors-schedule-prometheus": {
        "task": "collectors.tasks.schedule_prometheus_sources",
        "schedule": env_float("PERFHUB_PULLS_EVERY_S", 15.0),
    },
    # PostgreSQL: daily partitions of the raw tables, created days ahead (no-op on SQLite).
    "collectors-partitions": {"task": "collectors.tasks.ensure_partitions", "schedule": 3600.0},
    # Alert evaluation aligns to the minute itself; a doubled beat is harmless.
    "alerts-evaluate": {
        "task": "alerts.evaluate",
        "schedule": env_float("PERFHUB_EVALUATE_EVERY_S", 60.0),
    },
    # Notifications whose message was lost (a restarted broker) or whose worker died mid-send.
    "alerts-requeue-stuck": {
        "task": "alerts.requeue_stuck_notifications",
        "schedule": env_float("PERFHUB_NOTIFICATIONS_REQUEUE_EVERY_S", 300.0),
    },
    # Proof that beat schedules and a worker runs: /readyz reads the time it writes.
    "perfhub-heartbeat": {
        "task": "perfhub.heartbeat",
        "schedule": env_float("PERFHUB_HEARTBEAT_EVERY_S", 30.0),
    },
}

# The cache holds the rate-limit counters and beat's heartbeat (nothing durable): Redis
# when REDIS_URL is set (shared by every process), else this process's memory.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
CACHES["default"]["KEY_PREFIX"] = "perfhub"

# /readyz: beat is "seen recently" when its heartbeat is younger than this; roll-ups lag when
# the oldest batch not yet rolled up is older than this.
PERFHUB_READY_BEAT_MAX_AGE_S = env_int("PERFHUB_READY_BEAT_MAX_AGE_S", 120)
PERFHUB_READY_ROLLUP_LAG_MAX_S = env_int("PERFHUB_READY_ROLLUP_LAG_MAX_S", 300)

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "perfhub@localhost")

# Production hardening; `manage.py check --deploy` is clean when these are on.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]  # probes speak plain HTTP on loopback
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY") else None
X_FRAME_OPTIONS = "DENY"

# Production logs JSON lines (one per request and per Celery task, see perfhub/logs.py);
# DEBUG logs plain lines, and leaves request lines to the development server.
LOG_FORMAT = env_str("LOG_FORMAT", "plain" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "perfhub.logs.JsonFormatter"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "perfhub.requests": {"level": "WARNING" if DEBUG else "INFO"},
        # perfhub.tasks says the same per task, with its duration.
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
    },
}

# Fragments other apps serve for the dossier page, fetched by URL so dossiers imports neither.
PERFHUB_DOSSIER_FRAGMENTS = {
    "right_now": "/dashboards/services/{slug}/right-now/",
    "claims": "/dashboards/services/{slug}/claims/",
    "live_panels": "/dashboards/services/{slug}/live/",
    "timeline": "/dashboards/services/{slug}/timeline/",
    "this_week": "/dashboards/services/{slug}/timeline/?days=7",
}

# Claims: a dossier's figures are checked against this many minutes of live roll-ups; a
# baseline older than this many days is stale.
PERFHUB_CLAIMS_WINDOW_MINUTES = env_int("PERFHUB_CLAIMS_WINDOW_MINUTES", 60)
PERFHUB_BASELINE_STALE_DAYS = env_int("PERFHUB_BASELINE_STALE_DAYS", 90)

# Load tests: `--metadata` keys a team numbers its repeats with (`pass=2`), beside the built-in
# ones (loadtests.configuration.REPEAT_LABELS): runs differing only in them are one sweep.
PERFHUB_REPEAT_LABELS = env_list("PERFHUB_REPEAT_LABELS")
# Capacity planner: the share of each replica's measured capacity kept free in a plan.
PERFHUB_PLANNER_HEADROOM = env_float("PERFHUB_PLANNER_HEADROOM", 0.2)
# Load-test lint: thresholds overriding loadtests.lint.thresholds.Thresholds' defaults, as a JSON
# object ({"failed_refuse_share": 0.02}); docs/lint.md gives each default and its reason.
PERFHUB_LINT = json.loads(os.environ.get("PERFHUB_LINT") or "{}")

# Collectors: per-host minute roll-ups are kept this long (hourly roll-ups are kept); pulls of
# engine/exporter/agent URLs time out after this many seconds.
PERFHUB_MINUTE_ROLLUP_RETENTION_DAYS = env_int("PERFHUB_MINUTE_ROLLUP_RETENTION_DAYS", 30)
PERFHUB_PULL_TIMEOUT_S = env_int("PERFHUB_PULL_TIMEOUT_S", 5)
# Batches claimed by a roll-up that has not finished after this long are claimed again (the
# worker died mid-roll-up: killed, out of memory, its host gone).
PERFHUB_ROLLUP_CLAIM_TIMEOUT_S = env_int("PERFHUB_ROLLUP_CLAIM_TIMEOUT_S", 600)
# GET /metrics: allowed with this bearer token, or from these networks (CIDRs).
PERFHUB_METRICS_TOKEN = env_str("PERFHUB_METRICS_TOKEN")
PERFHUB_METRICS_ALLOW = env_list("PERFHUB_METRICS_ALLOW", "127.0.0.1/32,::1/128")
# Prometheus sources read steps at least this old, so the server has scraped them.
PERFHUB_PROMETHEUS_LAG_S = env_int("PERFHUB_PROMETHEUS_LAG_S", 30)

# Alerts: evaluate windows that closed this long ago (late samples cause no false alarms);
# "no data" rules look this far back for the hosts a service had.
PERFHUB_ALERTS_EVALUATION_LAG_S = env_int("PERFHUB_ALERTS_EVALUATION_LAG_S", 120)
# A notification queued, retrying or sending for this long is enqueued again (the claim still
# sends it once); keep it above the longest delivery (receivers time out well under a minute).
PERFHUB_NOTIFICATIONS_STUCK_AFTER_S = env_int("PERFHUB_NOTIFICATIONS_STUCK_AFTER_S", 600)
PERFHUB_ALERTS_NO_DATA_LOOKBACK_S = env_int("PERFHUB_ALERTS_NO_DATA_LOOKBACK_S", 3600)
# Alerts: shard tasks each minute's evaluation is split into (one per worker meant to share it).
PERFHUB_ALERTS_SHARDS = env_int("PERFHUB_ALERTS_SHARDS", 1)
# SLO burn-rate alerts: the multi-window pairs every service with an SLO starts with, as
# "name:factor:long window s:severity" items; the short window is a twelfth of the long one.
# Default: the SRE workbook's fast, slow and ticket pairs, and an outage pair (docs/slo.md).
PERFHUB_SLO_BURN_PAIRS = [
    dict(zip(("name", "factor", "long_s", "severity"), item.split(":"), strict=True))
    for item in env_list(
        "PERFHUB_SLO_BURN_PAIRS",
        "fast:14.4:3600:critical,slow:6:21600:critical,ticket:1:259200:warning,outage:20:600:critical",
    )
]
# An alert posted to Alertmanager as firing stays firing there this long without news.
PERFHUB_ALERTMANAGER_VALID_FOR_S = env_int("PERFHUB_ALERTMANAGER_VALID_FOR_S", 240)
