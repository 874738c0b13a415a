"""ODL3xx: host callbacks and progress meters."""
