"""`python -m odelint` is the `odelint` command."""

import sys

from odelint.faces.cli import main

sys.exit(main())
