"""ODL8xx: Diffrax solves."""
