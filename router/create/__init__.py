"""create."""
