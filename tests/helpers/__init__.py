"""Shared test helpers: repos, origins, topics, plans, faults, the fake gh, the client."""
