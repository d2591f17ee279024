"""The jinja2 environment over ``templates/`` (inside the wheel, or the checkout)."""

from __future__ import annotations

import functools
from typing import Any

from router.share import share_path


@functools.cache
def _environment() -> Any:
    import jinja2  # lazy: ~80 ms, and most commands render nothing

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(share_path("templates")),
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with ``context``."""
    return _environment().get_template(template).render(**context)
