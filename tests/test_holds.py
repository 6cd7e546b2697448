"""The scheduler's holds (focused.core.holds): requests are held back while one is open, named by the first
open reason, and the engine is woken once the last is released, whether its Deferred succeeded or failed."""

import pytest
from twisted.internet.defer import Deferred, fail

from focused.core.holds import Holds


def test_holds_name_their_reason_and_wake_the_engine_when_the_last_is_released() -> None:
    woken: list[int] = []
    holds = Holds(lambda: woken.append(1))
    assert holds.holding() is None
    training, rescoring, again = Deferred[int](), Deferred[int](), Deferred[int]()
    holds.hold("training", training)
    holds.hold("rescoring", rescoring)
    holds.hold("rescoring", again)
    assert holds.holding() == "rescoring"  # a re-score's priorities are named first
    got: list[int] = []
    rescoring.addCallback(got.append)
    rescoring.callback(3)
    assert got == [3] and holds.holding() == "rescoring" and not woken  # the result goes on down the chain
    again.callback(4)
    assert holds.holding() == "training" and not woken
    training.errback(RuntimeError("the training failed"))
    assert holds.holding() is None and woken == [1]
    failures: list[object] = []
    training.addErrback(failures.append)  # the failure is the caller's, not swallowed by the hold
    assert len(failures) == 1


def test_a_hold_on_a_deferred_that_has_fired_is_released_at_once() -> None:
    woken: list[int] = []
    holds = Holds(lambda: woken.append(1))
    done = fail(ValueError("already failed"))
    holds.hold("training", done)
    assert holds.holding() is None and woken == [1]
    done.addErrback(lambda failure: None)


def test_an_unknown_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown hold reason 'lunch'; valid: rescoring, training"):
        Holds(lambda: None).hold("lunch", Deferred())
