"""Tools for working on odelint itself, run from a checkout: `python -m odelint.dev new-rule`
scaffolds a rule and its fixtures, `python -m odelint.dev generate` rewrites every file made
from the rules' metadata (see CONTRIBUTING.md)."""
