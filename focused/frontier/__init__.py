"""The crawl frontier: where waiting URLs live, in memory or in a durable store.

* :mod:`focused.frontier.heap`: the in-memory best-first heap (parent merge, re-scoring);
* :mod:`focused.frontier.store`: the store interface the scheduler uses;
* :mod:`focused.frontier.memory`, :mod:`focused.frontier.sqlite`, :mod:`focused.frontier.redis`: its backends;
* :mod:`focused.frontier.sqlitefile`: the SQLite store's file (schema, format versions, checks, quarantine);
* :mod:`focused.frontier.rescore`, :mod:`focused.frontier.rescore_redis`: re-scoring the waiting URLs (each
  store's job, run at once or in the background, and the decoding of their payloads);
* :mod:`focused.frontier.payloads`, :mod:`focused.frontier.requests`, :mod:`focused.frontier.compact`: requests and
  payloads as data (no pickle), and :mod:`focused.frontier.linkrequest`, the request a link becomes;
* :mod:`focused.frontier.leases`, :mod:`focused.frontier.redis_lua`, :mod:`focused.frontier.settings`: the Redis
  store's leases and scripts, and the store a crawl's settings choose.
"""
