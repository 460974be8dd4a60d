"""`python -m grpo_tui` is `grpo-tui`."""

import sys

from grpo_tui.cli import main

if __name__ == "__main__":
    sys.exit(main())
