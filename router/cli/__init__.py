"""The command line: the typer app, the early path that answers without it, one module per command family.

No git and no file logic lives here: each command parses, calls one core function and
renders its result (text, or one JSON object under ``--json``) with the exit code.
"""
