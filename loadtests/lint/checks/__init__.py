"""Every lint check, one module each: every module in this folder is imported (core.discovery)
and registers its check; findings are listed by each check's `order`."""

from core.discovery import import_submodules

import_submodules(__name__)
