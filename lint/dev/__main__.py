"""`python -m odelint.dev new-rule CODE NAME FAMILY` | `python -m odelint.dev generate [--check]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from odelint.dev import checkout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m odelint.dev", description="Tools for odelint's own checkout.")
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser("new-rule", help="scaffold a rule module and its fixture folder")
    new.add_argument("code", help="ODL + three digits, the hundreds digit naming the family (ODL7xx: arrays)")
    new.add_argument("name", help="kebab-case, e.g. prng-key-reuse")
    new.add_argument("family", help=f"the rules folder: {', '.join(checkout.FAMILIES)}")
    generate = commands.add_parser("generate", help="write the rules' index, docs/rules.md and README's table")
    generate.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale files")
    arguments = parser.parse_args(argv)
    try:
        root = checkout.find()
        if arguments.command == "new-rule":
            from odelint.dev import scaffold

            for path in scaffold.new_rule(root, arguments.code.upper(), arguments.name, arguments.family):
                print(f"wrote {path}")
            print(f"next: fill in every TODO, then `odelint confirm --rule {arguments.code.upper()}` and "
                  "`python -m odelint.dev generate` (CONTRIBUTING.md)")
            return 0
        from odelint.dev import generate as generating

        checkout.require_imported_from(root)
        return generating.run(root, check=arguments.check)
    except checkout.CheckoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
