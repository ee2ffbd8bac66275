"""User text in figures is drawn as typed: a run named `$x^$` is a name, not TeX (matplotlib's mathtext)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plain_text(fig: Figure) -> Figure:
    """Every text of the figure drawn as typed (no mathtext), including those made outside `rc_context`."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
    return fig
