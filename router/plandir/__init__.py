"""plandir."""
