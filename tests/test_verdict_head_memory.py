"""The verdict head's scoring block is derived, built when first needed: released in a crawl process whose
worker judges the pages, left out of the worker's pickle, and always the same verdicts."""

from __future__ import annotations

import pickle

import numpy as np
import scipy.sparse as sp

from focused.learning.critic.verdict_head import train_head


def test_released_and_pickled_heads_judge_the_same() -> None:
    rng = np.random.default_rng(0)
    n_features, n_classes = 4096, 5
    X = sp.random(300, n_features, density=0.02, format="csr", random_state=1, data_rvs=lambda k: rng.integers(1, 4, k))
    y = rng.integers(0, n_classes, 300)
    head = train_head(X, y, n_classes, max_weights=200)
    pages = X[:40]
    want = head.posteriors(pages)
    built = pickle.dumps(head)  # the block exists now: the pickle still leaves it out
    assert len(built) < len(pickle.dumps(dict(head.__dict__)))
    head.release()
    assert head._scoring is None
    assert np.array_equal(head.posteriors(pages), want)  # built again, the same
    copy = pickle.loads(built)
    assert copy._scoring is None
    assert np.array_equal(copy.posteriors(pages), want)


def test_the_crawl_process_releases_the_block_once_the_worker_has_started() -> None:
    import time
    from types import SimpleNamespace

    from focused.analysis.worker import AnalysisConfig, AnalysisPool

    rng = np.random.default_rng(1)
    X = sp.random(50, 512, density=0.05, format="csr", random_state=2, data_rvs=lambda k: rng.integers(1, 4, k))
    head = train_head(X, rng.integers(0, 3, 50), 3, max_weights=50)
    want = head.posteriors(X[:5])  # builds the block, as pages read before the worker started do
    assert head._scoring is not None
    pool = AnalysisPool(AnalysisConfig(critic=SimpleNamespace(head=head), fingerprints=False))
    try:
        pool.ready.result(timeout=120)
        deadline = time.monotonic() + 10
        while head._scoring is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert head._scoring is None
    finally:
        pool.close()
    assert np.array_equal(head.posteriors(X[:5]), want)  # a page read here again: built anew, the same


def test_a_block_built_again_after_the_release_is_released_again() -> None:
    """Pages read in the crawl process while the worker started may be judged after the first release and
    build the block again: the pool releases it again every ``RELEASE_EVERY`` pages it hands out."""
    from types import SimpleNamespace

    from focused.analysis.worker import RELEASE_EVERY, AnalysisConfig, AnalysisPool

    rng = np.random.default_rng(3)
    X = sp.random(50, 512, density=0.05, format="csr", random_state=4, data_rvs=lambda k: rng.integers(1, 4, k))
    head = train_head(X, rng.integers(0, 3, 50), 3, max_weights=50)
    pool = AnalysisPool(AnalysisConfig(critic=SimpleNamespace(head=head), fingerprints=False))
    try:
        pool.ready.result(timeout=120)
        want = head.posteriors(X[:5])  # judged here after the release: built again
        assert head._scoring is not None
        html = "<html><body><p>a page</p></body></html>"
        futures = [pool.submit(html, "http://127.0.0.1/p", "utf-8", False) for _ in range(RELEASE_EVERY - 1)]
        assert head._scoring is not None
        futures.append(pool.submit(html, "http://127.0.0.1/p", "utf-8", False))
        assert head._scoring is None
        for future in futures:  # the worker's stand-in critic cannot judge: only the release is under test
            future.exception(timeout=120)
    finally:
        pool.close()
    assert np.array_equal(head.posteriors(X[:5]), want)
