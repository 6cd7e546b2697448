"""The garbage-collection extension freezes the start-up's objects and raises the youngest threshold."""

import gc

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from focused.extensions.gctuning import GarbageCollection


@pytest.fixture
def collector_state():
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_engine_start_freezes_the_start_up_and_sets_the_threshold(collector_state):
    crawler = get_crawler(Spider, settings_dict={"FOCUSED_GC_THRESHOLD": 12345})
    ext = GarbageCollection.from_crawler(crawler)
    gc.unfreeze()
    survivor = [object() for _ in range(100)]  # alive at the start: frozen
    older, oldest = gc.get_threshold()[1:]
    ext.engine_started()
    assert gc.get_threshold() == (12345, older, oldest)
    assert gc.get_freeze_count() >= len(survivor)


def test_zero_leaves_pythons_collector_alone():
    with pytest.raises(NotConfigured):
        GarbageCollection.from_crawler(get_crawler(Spider, settings_dict={"FOCUSED_GC_THRESHOLD": 0}))


def test_the_crawler_has_it_and_plain_scrapy_does_not():
    from focused import settings
    from focused.spiders.plain import PlainSpider

    assert "focused.extensions.gctuning.GarbageCollection" in settings.EXTENSIONS
    assert "focused.extensions.gctuning.GarbageCollection" not in PlainSpider.custom_settings["EXTENSIONS"]
