import sqlite3

import pytest

from focused.crawldb import CrawlDB, CrawlDBError, iter_links, iter_pages, read_meta


def add(db, url, order, links=(), html="<p>x</p>"):
    db.add_page(
        url=url,
        fetch_order=order,
        parent=None,
        depth=0,
        status=200,
        content_type="text/html",
        title="t",
        relevance=0.25 * order,
        predicted_class="course",
        top_classes=["course", "other"],
        links=list(links),
        html=html,
    )


def test_pages_links_meta_round_trip(tmp_path):
    path = tmp_path / "sub" / "crawl.sqlite"
    db = CrawlDB(path, commit_every=1)
    db.set_meta(topic="course", strategy="baseline")
    add(db, "http://a/", 1, links=["http://b/", "http://c/"], html="<p>héllo</p>")
    add(db, "http://b/", 2, links=["http://a/"])
    db.close()
    pages = list(iter_pages(path, with_html=True))
    assert [p.url for p in pages] == ["http://a/", "http://b/"]
    assert pages[0].html == "<p>héllo</p>"
    assert pages[1].relevance == 0.5 and pages[1].top_classes == ("course", "other")
    assert list(iter_links(path)) == [
        ("http://a/", "http://b/"),
        ("http://a/", "http://c/"),
        ("http://b/", "http://a/"),
    ]
    assert read_meta(path) == {"topic": "course", "strategy": "baseline"}


def test_html_can_be_left_out(tmp_path):
    db = CrawlDB(tmp_path / "c.sqlite", store_html=False)
    add(db, "http://a/", 1)
    db.close()
    assert next(iter_pages(tmp_path / "c.sqlite", with_html=True)).html == ""


def test_uncommitted_batch_is_flushed_on_close(tmp_path):
    db = CrawlDB(tmp_path / "c.sqlite", commit_every=1000)
    for i in range(1, 11):
        add(db, f"http://x/{i}", i)
    db.close()
    assert len(list(iter_pages(tmp_path / "c.sqlite"))) == 10


def test_not_a_crawl_database(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(CrawlDBError):
        CrawlDB(bad)
    with pytest.raises(CrawlDBError, match="not found"):
        list(iter_pages(tmp_path / "missing.sqlite"))
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA user_version=99")
    conn.commit()
    conn.close()
    with pytest.raises(CrawlDBError, match="schema"):
        CrawlDB(other)


def test_the_stats_file_has_what_components_counted_after_spider_closed(tmp_path):
    """The apprentice's last training ends after ``spider_closed``; the stats file is written again at
    ``engine_stopped`` so that its figures are in it."""
    import json

    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from focused.extensions.statsfile import StatsFile

    path = tmp_path / "stats.json"
    crawler = get_crawler(Spider, settings_dict={"FOCUSED_STATS_FILE": str(path)})
    ext = StatsFile.from_crawler(crawler)
    crawler.stats.set_value("focused/pages", 3)
    ext.spider_closed("finished")
    assert json.loads(path.read_text()) == {"focused/pages": 3, "finish_reason": "finished"}
    crawler.stats.inc_value("focused/apprentice/batches_trained")  # a training that ended meanwhile
    ext.engine_stopped()
    assert json.loads(path.read_text())["focused/apprentice/batches_trained"] == 1
    assert json.loads(path.read_text())["finish_reason"] == "finished"
