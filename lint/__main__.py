"""`python -m odelint` is the `odelint` command."""

import sys

from odelint.cli import main

sys.exit(main())
