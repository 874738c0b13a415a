"""ODL5xx: dependency versions (requirements, pyproject, environment files)."""
