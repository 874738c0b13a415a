"""What keeping the code of generated methods saves (odelint.engine.generated_code): LibCST's
import, and the language server's (pygls, lsprotocol and odelint's server module), each
timed inside a fresh process, with the code kept and compiled, in turns.

    python bench/generated_code.py [--runs 8]

"Kept" reads the user's cache folder (filled first by an untimed run of each, with bytecode
writing allowed); "compiled" points `ODELINT_CACHE_DIR` at an empty folder and sets
`PYTHONDONTWRITEBYTECODE`, so every process compiles the methods again, as before the cache.
Prints the median and every sample in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

LIBCST = ("import time; start = time.perf_counter(); import odelint\n"
          "from odelint.engine.deferred import load; load('libcst'); print(time.perf_counter() - start)")
SERVER = ("import time; start = time.perf_counter()\n"
          "from odelint.engine import generated_code as g\n"
          "with g.kept(g.origin_of('lsprotocol'), g.ATTRS, g.DATACLASSES):\n"
          "    from odelint.faces.server_lsp import build\n"
          "print(time.perf_counter() - start)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    kept = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as empty:
        compiled = {**os.environ, "ODELINT_CACHE_DIR": empty, "PYTHONDONTWRITEBYTECODE": "1"}
        cases = [(f"{what}, {how}", code, environment)
                 for what, code in (("LibCST's import", LIBCST), ("the server's imports", SERVER))
                 for how, environment in (("kept", kept), ("compiled", compiled))]
        for _, code, environment in cases[::2]:
            _seconds(code, environment)  # fills the cache
        samples: dict[str, list[float]] = {}
        for _ in range(args.runs):
            for name, code, environment in cases:
                samples.setdefault(name, []).append(_seconds(code, environment))
    for name, values in samples.items():
        listed = ", ".join(f"{1000 * value:.0f}" for value in values)
        print(f"{name:34} median {1000 * statistics.median(values):4.0f} ms  [{listed}]")
    return 0


def _seconds(code: str, environment: dict[str, str]) -> float:
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          check=True, timeout=120)
    return float(done.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
