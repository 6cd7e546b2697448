"""The crawl frontier: where waiting URLs live, in memory or in a durable store.

* :mod:`focused.frontier.heap`: the in-memory best-first heap (parent merge, re-scoring);
* :mod:`focused.frontier.store`: the store interface the scheduler uses;
* :mod:`focused.frontier.memory`, :mod:`focused.frontier.sqlite`, :mod:`focused.frontier.redis`: its backends;
* :mod:`focused.frontier.payloads`, :mod:`focused.frontier.requests`: requests and payloads as data (no pickle).
"""

from focused.frontier.heap import AGGREGATIONS, TIEBREAKS, Entry, Frontier
from focused.frontier.store import FrontierStore, Popped, Push, PushResult, StoreError

__all__ = [
    "AGGREGATIONS",
    "TIEBREAKS",
    "Entry",
    "Frontier",
    "FrontierStore",
    "Popped",
    "Push",
    "PushResult",
    "StoreError",
]
