"""Parse, run the rules, apply noqa, build fixes; one file or many."""
