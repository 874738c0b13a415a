"""Load what every lint needs (the model, the rules, LibCST) before the first file asks for it.

A face calls this where there is time to spare or work to share: flake8's main process before
it forks its workers (each loaded them again for itself, about 0.4 s of CPU per worker), and
the language server once the editor has started it, so that the first document opened is
answered in the time a lint takes (through the server: 430 ms after `didOpen` when nothing was
loaded, 260 ms once loaded). What is loaded lives as long as the process, so it is frozen out
of the cyclic collector's scans.
"""

from __future__ import annotations

import gc


def load_linting() -> None:
    from odelint.analysis import facts  # noqa: F401  (what every lint that parses needs)
    from odelint.api.registry import all_rules
    from odelint.engine.collector import fewer_collections
    from odelint.engine.deferred import load

    all_rules()  # imports every rule
    load("libcst")
    fewer_collections()
    gc.freeze()  # also where fewer_collections had already run (the server starts with it)
