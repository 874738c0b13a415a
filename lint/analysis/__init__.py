"""The semantic model every rule asks: scopes, names, value kinds, contexts, flow."""
