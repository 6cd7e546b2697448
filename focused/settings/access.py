"""Reading a ``FOCUSED_*`` setting: typed as its default, and defaulting to it.

Components read every ``FOCUSED_*`` setting through :func:`setting`, so a
default lives only in :mod:`focused.settings.defaults`: a component enabled
from another Scrapy project, whose settings do not include ours, gets the same
defaults as a crawl of this project. A test fails if a component calls a
settings getter on a ``FOCUSED_*`` name itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from focused.settings import defaults

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def setting(settings: BaseSettings, name: str) -> Any:
    """``settings[name]`` read with the getter of its default's type (bool, int, float or text),
    the default of :mod:`focused.settings.defaults` when it is not set."""
    try:
        default = getattr(defaults, name)
    except AttributeError:
        raise KeyError(f"{name} is not a setting of focused.settings.defaults") from None
    if isinstance(default, bool):
        return settings.getbool(name, default)
    if isinstance(default, int):
        return settings.getint(name, default)
    if isinstance(default, float):
        return settings.getfloat(name, default)
    return settings.get(name, default)
