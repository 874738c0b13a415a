"""Which files to lint and how: discovery, configuration, selection, cache, safe I/O."""
