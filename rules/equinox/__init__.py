"""ODL6xx: Equinox modules and transforms."""
