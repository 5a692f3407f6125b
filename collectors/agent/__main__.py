"""`python -m collectors.agent ...`"""

from .cli import main

raise SystemExit(main())
