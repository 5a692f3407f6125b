"""PerfHub GPU-host agent: reads NVML, scrapes engine /metrics, pushes batches to PerfHub.

Imports no Django and nothing else from the project, so it installs on a GPU host with
nvidia-ml-py and requests only.
"""

__version__ = "0.1.0"
