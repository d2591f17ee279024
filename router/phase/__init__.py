"""phase."""
