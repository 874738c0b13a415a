"""ODL1xx: custom derivatives (custom_jvp / custom_vjp and their rules)."""
