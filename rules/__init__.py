"""odelint's rules: every module here defines rule classes, found by `odelint.api.registry`."""
