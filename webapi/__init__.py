"""What every PerfHub HTTP API shares (size and depth limits, the error shape); imports no app,
so every app's API may use it (see .importlinter)."""
