"""gunicorn settings for deploy/web.sh: its own lines as JSON, like the application's.

No access log: perfhub.logs.RequestLogMiddleware writes one line per request, with its
duration and outcome.

The master loads the application once and freezes it before it forks the workers
(`preload_app`, `when_ready`): they share its memory until they write to it. Measured with
three workers (docs/operations.md, Sizing): 17 MB of private memory per worker, against 125 MB
when each loaded the application itself. New code therefore needs a restart of the master
(a new container, or `kill -USR2` then `-QUIT` the old master); `kill -HUP` only restarts the
workers, with the code the master loaded.
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
preload_app = True
# Probes and agents keep connections short; a slow client must not hold a worker forever.
timeout = 60
graceful_timeout = 20

# glibc raises its mmap threshold each time it frees a large mmapped block, after which
# ingest's ~100 kB bodies and their buffers come from the heap and fragment it: a worker's RSS
# climbed ~25% over its first few million samples and stayed there (docs/ingest-speed.md).
# A fixed threshold keeps large buffers mmapped, returned to the system when freed.
MMAP_THRESHOLD_BYTES = 64 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def fix_mmap_threshold() -> bool:
    """Set glibc's mmap threshold (which also stops its adjusting); False where libc has no
    `mallopt` (other C libraries manage memory their own way) or refused it."""
    import ctypes
    import ctypes.util

    libc_name = ctypes.util.find_library("c")
    mallopt = getattr(ctypes.CDLL(libc_name), "mallopt", None) if libc_name else None
    return mallopt is not None and mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1


def post_fork(server, worker) -> None:
    fix_mmap_threshold()


def freeze_loaded_objects() -> int:
    """Load every view (Django imports them at the first request otherwise), then move the
    objects loaded so far out of the garbage collector's reach; returns how many.

    A full collection scans every tracked object: with the application loaded, about 160,000
    and 50 ms of CPU. One runs every so many requests, and the request it lands on waits: in
    `bench/ingest.py` the slowest ingest request took 105-110 ms, against 15-21 ms frozen.
    Frozen, the start-up objects are never scanned again; what requests leave behind is
    collected as before."""
    from django.urls import get_resolver

    from perfhub.gc_freeze import freeze_loaded_objects as freeze

    get_resolver().url_patterns  # noqa: B018 - imports every urls module and its views
    return freeze()


def when_ready(server) -> None:
    """In the master, once the application is loaded, before the first worker is forked."""
    if server is not None and not server.cfg.preload_app:
        return  # nothing loaded here (--preload off): each worker freezes its own
    from django.db import connections

    connections.close_all()  # a connection opened while loading must not be shared by workers
    freeze_loaded_objects()


def post_worker_init(worker) -> None:
    # What the worker loaded itself (and everything, were preload_app turned off).
    freeze_loaded_objects()
