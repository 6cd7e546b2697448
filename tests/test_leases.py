"""Leases: a popped request is acknowledged once the engine lets go of it and its page is committed."""

from __future__ import annotations

from focused.frontier.leases import Leases


def test_a_lease_waits_for_the_engine_then_for_the_commit() -> None:
    leases = Leases()
    leases.lease("r1", "k1", submitted=5)
    leases.lease("r2", "k2", submitted=5)
    assert leases.due(lambda: {"r1", "r2"}, submitted=6, committed=5) == []  # both held by the engine
    assert len(leases) == 2
    # r1 let go after a page was submitted (6 > 5 at its pop): it waits for page 6 to be committed
    assert leases.due(lambda: {"r2"}, submitted=6, committed=5) == []
    assert leases.due(lambda: {"r2"}, submitted=6, committed=6) == ["k1"]
    assert len(leases) == 1


def test_a_lease_with_no_page_stored_meanwhile_is_acknowledged_at_once() -> None:
    leases = Leases()
    leases.lease("r", "k", submitted=3)
    assert leases.due(lambda: set(), submitted=3, committed=0) == ["k"]  # a 404: nothing to wait for
    assert len(leases) == 0


def test_an_engine_that_cannot_tell_releases_every_lease() -> None:
    leases = Leases()
    leases.lease("a", "ka", submitted=0)
    leases.lease("b", "kb", submitted=1)
    asked = []
    assert leases.due(lambda: asked.append(1), submitted=2, committed=1) == []  # both released, pages pending
    assert asked == [1]
    assert leases.due(lambda: asked.append(2), submitted=2, committed=2) == ["ka", "kb"]
    assert asked == [1]  # nothing held: the engine is not asked
