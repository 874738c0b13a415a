"""Soak one property test of tests/test_property.py over many cores: N examples split into
K shards, each a separate process with its own Hypothesis seed (so the shards explore
different programs), no example database, and the `long` profile's other settings.

    python bench/soak.py TEST [--examples 10000] [--shards 16] [--first-seed 0]

Prints one line per shard (seed, examples, seconds, passed or the failure with its
reproduction blob) and a total; exits 1 when any shard failed. A single-process run of
the whole profile is `pytest tests/test_property.py::TEST --hypothesis-profile=long`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
import traceback

TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")


def _shard(job: tuple[str, int, int]) -> tuple[int, int, float, str | None]:
    """Run `examples` examples of TEST with seed `seed`; the failure's text, or None."""
    name, seed, examples = job
    sys.path.insert(0, TESTS)
    import conftest  # noqa: F401  (registers the profiles)
    import test_property
    from hypothesis import seed as with_seed
    from hypothesis import settings

    test = getattr(test_property, name)
    profile = settings(settings.get_profile("long"), max_examples=examples, database=None)
    started = time.perf_counter()
    try:
        with_seed(seed)(profile(test))()
    except BaseException:  # the report is the point
        return seed, examples, time.perf_counter() - started, traceback.format_exc(limit=-3)
    return seed, examples, time.perf_counter() - started, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test", help="a test function of tests/test_property.py")
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--shards", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    per_shard = -(-args.examples // args.shards)
    jobs = [(args.test, args.first_seed + i, per_shard) for i in range(args.shards)]
    started = time.perf_counter()
    failed = passed = 0
    with multiprocessing.Pool(args.shards) as pool:
        for seed, examples, seconds, failure in pool.imap_unordered(_shard, jobs):
            if failure is None:
                passed += examples
                print(f"seed {seed}: {examples} examples passed in {seconds:.0f} s", flush=True)
            else:
                failed += 1
                print(f"seed {seed}: FAILED after {seconds:.0f} s\n{failure}", flush=True)
    print(f"{args.test}: {passed} examples passed in {args.shards - failed} of {args.shards} shards, "
          f"{failed} shard(s) failed; {time.perf_counter() - started:.0f} s wall")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
