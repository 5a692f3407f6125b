"""Every lint check, one module each; importing this package registers them all, in this order
(the order findings are listed in)."""

from . import too_short  # noqa: F401  isort: skip
from . import tiny_outputs  # noqa: F401  isort: skip
from . import output_length  # noqa: F401  isort: skip
from . import cold_start  # noqa: F401  isort: skip
from . import offered_load  # noqa: F401  isort: skip
from . import failed_share  # noqa: F401  isort: skip
from . import unfinished  # noqa: F401  isort: skip
from . import zero_variance  # noqa: F401  isort: skip
from . import duration  # noqa: F401  isort: skip
from . import impossible  # noqa: F401  isort: skip
from . import sweep_workloads  # noqa: F401  isort: skip
