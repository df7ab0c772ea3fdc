"""`python -m rlvr.scale`: see `rlvr.scale.cli`."""

import sys

from .cli import main

if __name__ == "__main__":  # spawned ranks import this module too: they must not run the command again
    sys.exit(main())
