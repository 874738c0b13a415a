"""Hypothesis profiles: a small `ci` run by default, `--hypothesis-profile=long` for a soak.

`ci` is derandomized: every clone runs the same examples, so a run fails for the change it
tests, never for a program the generator happened to reach this time. Exploring is the
soak's job; what it finds becomes an `@example` of its test."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=25, deadline=None, suppress_health_check=_QUIET, print_blob=True,
                          derandomize=True)
settings.register_profile("long", max_examples=10_000, deadline=None, suppress_health_check=_QUIET,
                          print_blob=True)
settings.load_profile("ci")
