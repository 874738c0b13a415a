"""The package re-exports its model classes with a star import, as many research repos do."""
from .mlp import *  # noqa: F403
