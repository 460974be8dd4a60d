"""`python -m grpo_tui` is `grpo-tui`."""

import sys

from grpo_tui.cli import main

sys.exit(main())
