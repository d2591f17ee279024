"""The command line: every command declared once (spec.py), one reader (parse.py), one
runner (main.py), and one module of handlers per command family.

No git and no file logic lives here: each command parses, calls one core function and
renders its result (text, or one JSON object under ``--json``) with the exit code.
"""
