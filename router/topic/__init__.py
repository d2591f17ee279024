"""topic."""
