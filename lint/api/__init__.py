"""The rule API: what a rule is, what it reports, and how rules are found."""
