"""ODL4xx: lax control flow and hashing."""
