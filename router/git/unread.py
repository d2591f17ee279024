"""Why git's files are not read here for a repository: the kinds, and their words.

The file reader (:mod:`router.git.files`) raises ``Unsure`` with one of these
when a repository's config or ref storage is not the plain one it trusts, and
git answers instead; a refusal that could not ask git either names the kind.
"""

from __future__ import annotations

from enum import StrEnum


class UnreadLayout(StrEnum):
    """Why this reader does not read a repository's config or refs: git answers instead."""

    CONFIG_UNREADABLE = "config-unreadable"
    EXTENSIONS_LINE = "extensions-line"  # an [extensions] line it does not parse
    UNKNOWN_FORMAT = "unknown-format"  # an object or ref format it does not know
    UNNAMED_REFTABLE = "unnamed-reftable"  # a reftable the config does not name
    REFTABLE = "reftable"  # its refs are in a reftable, in no file


def layout_words(kind: str, common: str) -> str:
    """Why the repository at ``common`` (its common git dir) is not read here."""
    return {
        UnreadLayout.CONFIG_UNREADABLE: f"{common}/config cannot be read",
        UnreadLayout.EXTENSIONS_LINE: f"{common}/config has an [extensions] line not read here",
        UnreadLayout.UNKNOWN_FORMAT: f"{common}/config names a format not read here",
        UnreadLayout.UNNAMED_REFTABLE: f"{common} holds a reftable its config does not name",
        UnreadLayout.REFTABLE: f"{common} keeps its refs in a reftable",
    }[UnreadLayout(kind)]
