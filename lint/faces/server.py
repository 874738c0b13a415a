"""run the language server (LSP over stdio) for editors"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debounce", type=float, default=0.3, metavar="SECONDS",
                        help="wait this long after the last edit before linting (default: 0.3)")


def run(args: argparse.Namespace) -> int:
    """Serve until the client says exit; pygls is imported only here, so `odelint check` never pays for it."""
    from odelint.faces import server_helper

    helper = server_helper.start()  # before any import: the helper loads the engine meanwhile
    from odelint.engine import generated_code

    try:
        # lsprotocol's 554 message classes are attrs classes: their methods' code is kept across runs.
        with generated_code.kept(generated_code.origin_of("lsprotocol"), generated_code.ATTRS,
                                 generated_code.DATACLASSES):
            from odelint.faces.server_lsp import build
    except ImportError as error:
        if helper is not None:
            helper.close()
        print(f"odelint: error: the server needs pygls and lsprotocol ({error}); "
              "install them with `pip install pygls lsprotocol` (or odelint's `server` extra: "
              "`pip install '.[server]'` in its checkout)", file=sys.stderr)
        return 2
    from odelint.engine.collector import fewer_collections
    from odelint.faces.server_framing import serve_stdio

    server = build(max(args.debounce, 0.0), helper)
    fewer_collections()
    return serve_stdio(server)
