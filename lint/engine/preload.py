"""Load what every lint needs (the model, the rules, LibCST) before the first file asks for it.

A face calls this where there is time to spare or work to share: flake8's main process before
it forks its workers (each loaded them again for itself, about 0.4 s of CPU per worker), and
the language server once the editor has started it, and the helper process the server forks as
it starts (odelint.faces.server_helper), which loads while the server imports pygls and lints the
first document opened. What is loaded lives as long as the process, so it is frozen out
of the cyclic collector's scans. The code of the methods LibCST's and odelint's dataclasses
generate is kept across runs (odelint.engine.generated_code).
"""

from __future__ import annotations

import gc
import importlib
import pkgutil

# Imported on first use deep inside a lint: LibCST's parser and the normalisation CPython's
# compiler imports for a non-ASCII name. Left to each flake8 worker, every such import also set
# off a full collection (a new module is frozen: odelint.engine.collector.Sweeper).
_LOADED_LATER = ("libcst.native", "unicodedata")


def load_linting(every_analysis: bool = True) -> None:
    """`every_analysis`: also the model's parts that a lint imports only when it needs them
    (the Sketch's settling, the shims' guards): flake8's workers then share them. The
    language server leaves them to first use: the buffer opened first waits for its load,
    and the first lint of a training script needs none of them (about 6 ms)."""
    import odelint
    from odelint.engine import generated_code
    from odelint.engine.collector import fewer_collections
    from odelint.engine.deferred import load

    load("libcst")
    with generated_code.kept(odelint.__file__, generated_code.DATACLASSES):  # odelint's own dataclasses
        from odelint import analysis
        from odelint.api.registry import all_rules
        from odelint.engine import core  # noqa: F401  (the engine, its positions and noqa)

        for module in pkgutil.iter_modules(analysis.__path__, f"{analysis.__name__}.") if every_analysis else ():
            importlib.import_module(module.name)  # the pre-checks' too
        all_rules()  # imports every rule
    for name in _LOADED_LATER:
        importlib.import_module(name)
    fewer_collections()
    gc.freeze()  # also where fewer_collections had already run (the server starts with it)
