"""Every ``FOCUSED_*`` setting with its default, in one place.

Components read them with :func:`focused.settings.access.setting` (typed as the
default, and defaulting to it, whether or not the project's settings module is
in use); a value set with ``-s`` or in a spider's ``custom_settings`` wins. The ``#:`` comment above each setting is its
documentation: ``focused settings-doc`` writes docs/settings.md from them.
"""

from __future__ import annotations

#: Topic to focus on: a class of the critic, a subtree/prefix of its class
#: hierarchy, or a comma-separated union (``-a topic=...``).
FOCUSED_TOPIC = ""
#: Seed URLs, comma-separated (``-a seeds=...``); empty: the examples stored with the topic.
FOCUSED_SEEDS = ""
#: A file with one seed URL per line (``-a seeds_file=...``).
FOCUSED_SEEDS_FILE = ""
#: Frontier policy: ``apprentice`` (online relevance feedback), ``apprentice-offline``,
#: ``baseline`` (best-first on Pr(c*|u)), ``bfs``, ``oracle`` and ``oracle-lookahead`` (benchmark only).
FOCUSED_STRATEGY = "apprentice"
#: A predicate that defines relevance instead of the critic's threshold (``-a predicate=...``), e.g.
#: ``text:"machine learning" and (url:course or class:course>0.6)`` (grammar: :mod:`focused.relevance.predicates`).
#: With it the topic may be omitted. Empty: relevant means Pr(c*|u) >= FOCUSED_RELEVANCE_THRESHOLD.
FOCUSED_PREDICATE = ""
#: Critic model file (.npz: arrays + JSON header, never a pickle). Relative paths are taken from the project root.
FOCUSED_CRITIC_MODEL = "models/webkb-pagetype.npz"
#: Ground-truth labels (``url<TAB>label[<TAB>group]``), needed by the oracles only.
FOCUSED_LABELS = ""
#: The replayed web's link graph (.npz from ``focused bench``), needed by ``oracle-lookahead`` only.
FOCUSED_ORACLE_GRAPH = ""
#: How a URL linked from several fetched pages gets its priority:
#: ``first`` (the paper's footnote 2), ``max`` or ``mean`` over parents.
FOCUSED_PARENT_AGGREGATION = "max"
#: Tie-break among equal priorities: ``fifo`` or ``random`` (seeded by FOCUSED_SEED).
FOCUSED_TIEBREAK = "fifo"
#: Seed for every random choice the crawl makes (tie-breaks).
FOCUSED_SEED = 0
#: Relevance at or above which a page counts as relevant in stats and logs.
FOCUSED_RELEVANCE_THRESHOLD = 0.5
#: Store exactly this many pages, then stop (0 = no limit). Responses fetched: these pages, plus those that
#: store no page (robots.txt, HTTP errors, redirects); requests still queued when it closes are not fetched.
#: Workers of one Redis frontier share it (and may each fetch, unstored, what was on the wire when it closed).
FOCUSED_MAX_PAGES = 0
#: Log harvest and loss every this many pages (0 = never).
FOCUSED_LOG_EVERY = 100
#: Crawl database (SQLite). ``{topic}``, ``{strategy}``, ``{time}``, ``{job}`` and ``{unique}`` (process id and
#: a random suffix: two crawls started in the same second get two files) are filled in; empty disables it.
#: One crawl writes a file at a time. Under Scrapyd, when not given: ``crawls/PROJECT/SPIDER/JOB.sqlite``
#: (:mod:`focused.settings.scrapyd`).
FOCUSED_DB = "crawls/{topic}-{strategy}-{time}-{unique}.sqlite"
#: The Scrapyd job id (Scrapyd's ``_job`` argument sets it); ``{job}`` in FOCUSED_DB.
#: Empty outside Scrapyd, where ``{job}`` is the start time, like ``{time}``.
FOCUSED_JOB = ""
#: Store each page's HTML (zlib-compressed) in the crawl database, so that
#: link features can be recomputed offline (e.g. to train the apprentice).
FOCUSED_DB_STORE_HTML = True
#: Pages buffered before the database writer commits...
FOCUSED_DB_COMMIT_EVERY = 200
#: ...or seconds since its last commit, whichever comes first. A fetched URL is
#: acknowledged in the frontier only once its page is committed.
FOCUSED_DB_COMMIT_SECONDS = 1.0
#: Forward HTTP proxy of an offline replay (``focused replay``); empty = live web.
FOCUSED_REPLAY_PROXY = ""
#: Internal addresses (loopback, private, link-local, their IPv6 forms) are refused for every request,
#: redirects and meta refreshes included, except these: comma-separated CIDR networks, addresses or host
#: names, each optionally with ``:port`` (``127.0.0.0/8,::1``, ``127.0.0.1:8080``, ``intranet.example``);
#: not a yes/no value (``true`` is refused).
#: A configured proxy (FOCUSED_REPLAY_PROXY) is trusted; its targets are checked by name.
FOCUSED_ALLOW_INTERNAL = ""
#: Crawler traps. Query and ``;path`` parameters dropped from outlinks (session ids; case-insensitive,
#: comma-separated; empty: keep every URL as it is).
FOCUSED_SESSION_PARAMS = "jsessionid,phpsessid,aspsessionid,sessionid,session_id,sessid,sid,cfid,cftoken,oscsid,zenid"
#: Collapse the URL aliases a server answers alike before an outlink is queued: the scheme's default port,
#: repeated slashes in the path, a trailing ``index.html``/``index.htm`` (``dir/index.html`` -> ``dir/``);
#: focused.urls.
FOCUSED_URL_ALIASES = True
#: Links more than this many hops from a seed are not followed (0: no limit).
FOCUSED_MAX_DEPTH = 30
#: URLs in which one path segment occurs more than this many times are not followed (0: no limit).
FOCUSED_MAX_PATH_REPEATS = 3
#: Requests sent to one host at most (robots.txt aside); beyond it they are dropped (0: no limit).
FOCUSED_MAX_PAGES_PER_HOST = 10000
#: A page whose visible text is a near-duplicate of an earlier page's feeds no links to the frontier.
FOCUSED_NEAR_DUPLICATES = True
#: Near-duplicate: SimHash fingerprints (64 bits) of the two texts differ in at most this many bits (0 to 15).
FOCUSED_NEAR_DUPLICATE_BITS = 3
#: A URL pattern (digits and query values blanked) with at least this many near-duplicate pages, the
#: majority of its pages, is a trap: its waiting URLs are not fetched (0: never).
FOCUSED_TRAP_PATTERN_DUPLICATES = 3
#: ``replay`` applies settings for crawling a loopback replay (no delays, no
#: throttling, benchmark concurrency); empty keeps the polite live-web defaults.
FOCUSED_PROFILE = ""
#: Concurrency used by the ``replay`` profile. Low values keep the fetch order
#: close to the frontier's best-first order.
FOCUSED_REPLAY_CONCURRENCY = 2
#: Write the final crawl stats as JSON to this file (used by the benchmark).
FOCUSED_STATS_FILE = ""
#: Pre-trained apprentice (``focused train-apprentice``; ``-a apprentice=PATH``):
#: required by ``apprentice-offline``, a warm start for ``apprentice``.
FOCUSED_APPRENTICE_MODEL = ""
#: Pages per batch of online relevance feedback (the paper's B): instances
#: are added, and the model retrained, when a batch completes.
FOCUSED_APPRENTICE_BATCH = 200
#: Instances the apprentice needs (both buckets non-empty) before it switches in.
FOCUSED_APPRENTICE_MIN_INSTANCES = 200
#: Largest DOM offset |d| of the <t,d> link features.
FOCUSED_APPRENTICE_DMAX = 5
#: Links of fetched pages whose targets are not judged yet that the apprentice keeps (each becomes a training
#: instance when its target is judged; ~0.6 KB a link). Past it, the links to the targets met longest ago are
#: dropped, down to nine tenths of it (focused/apprentice/pending_dropped). 0: no limit. An apprentice shared
#: in Redis keeps these links in Redis, without this bound.
FOCUSED_APPRENTICE_MAX_PENDING = 1_000_000
#: Training instances (links whose target was judged) the apprentice's learner keeps (~0.5 KB each). Past it, the
#: oldest are dropped and their counts taken back, down to nine tenths of it (focused/apprentice/instances_dropped):
#: the model learns from the latest links. 0: no limit; a bound below FOCUSED_APPRENTICE_MIN_INSTANCES is raised to
#: it (and said in the log). An apprentice shared in Redis drops them from Redis too.
FOCUSED_APPRENTICE_MAX_INSTANCES = 1_000_000
#: Start no download while the apprentice trains a batch. With FOCUSED_MAX_UNSCORED_PAGES = 0 the fetch
#: order is then the same on every run, whatever the training thread's speed (reproducible crawls and
#: tests); the crawl waits for each retrain. False: the crawl goes on with the frozen model meanwhile.
#: Workers sharing an apprentice in Redis (FOCUSED_APPRENTICE_SHARED) do not wait: they learn on their own clock.
FOCUSED_APPRENTICE_WAIT = False
#: Add the critic's top classes of the source page, with their prefixes (§3.8).
FOCUSED_APPRENTICE_CLASS_FEATURES = False
#: The critic also reads each link's anchor text. Its two views of a link,
#: Pr(c*|u) and Pr(c*|anchor), set the priority before the apprentice switches
#: in and are side features the apprentice stacks with the <t,d> evidence.
#: False gives the paper's apprentice (the baseline's Pr(c*|u) until switch-in).
FOCUSED_APPRENTICE_ANCHOR_CRITIC = True
#: Before switch-in: priority = sigmoid((1-w)*logit Pr(c*|u) + w*logit Pr(c*|anchor)).
FOCUSED_APPRENTICE_ANCHOR_WEIGHT = 0.7
#: Exploration bonus beta (logit units; 0: off): a link's logit gains beta * decay * novelty, novelty the
#: mean over its <t,d> features of 1/sqrt(1 + instances holding the feature) (focused.learning.apprentice.explore),
#: so links whose context the apprentice has no evidence on get tried (bench variant apprentice:exploreN).
FOCUSED_APPRENTICE_EXPLORE = 0.0
#: Half-life H of the exploration bonus in pages: decay = H / (H + pages fetched); 0: no decay.
FOCUSED_APPRENTICE_EXPLORE_HALF_LIFE = 0.0
#: Sibling feedback gamma (logit units; 0: off): a link's logit gains gamma * (logit q_u - logit p),
#: q_u the smoothed mean relevance of the pages its source page u led to so far, p the crawl's
#: (focused.learning.apprentice.siblings; bench variants apprentice:siblingsN, apprentice:nosiblings). On by
#: default, with the spread damping below.
FOCUSED_APPRENTICE_SIBLINGS = 2.0
#: Pseudo-count m of the sibling feedback: judged children that weigh as much as the crawl's mean.
FOCUSED_APPRENTICE_SIBLINGS_PSEUDO = 2.0
#: s of the sibling term's damping (0: off): a source's term is scaled by 1 / (1 + (sd / s)^2), sd the
#: standard deviation of the critic's anchor logits over its links (bench variant spreadN).
FOCUSED_APPRENTICE_SIBLINGS_SPREAD = 2.0
#: With an exploration bonus or sibling feedback, the waiting URLs are re-scored every this many
#: pages, the learner's batches aside (bench variant apprentice:refreshN).
FOCUSED_APPRENTICE_REFRESH_PAGES = 50
#: ... during the first this many pages only (0: the whole crawl). Later the frontier is re-scored only at
#: each retrain (every FOCUSED_APPRENTICE_BATCH pages), with the terms of the moment: a large frontier is
#: slow to re-score (bench variant apprentice:untilN).
FOCUSED_APPRENTICE_REFRESH_UNTIL = 500
#: Additive smoothing of the apprentice's naive Bayes.
FOCUSED_APPRENTICE_ALPHA = 0.1
#: Only follow links to URLs fetched by an earlier crawl (its crawl database):
#: the paper's recall crawler (§3.6). ``-a restrict_to=crawl.sqlite``.
FOCUSED_RESTRICT_TO = ""
#: Where the frontier (waiting URLs, in-flight leases, the seen-set) lives:
#: ``auto`` (``redis`` with REDIS_URL, ``sqlite`` with JOBDIR, else ``memory``), ``memory``, ``sqlite``
#: (``JOBDIR/frontier.sqlite``, survives kill -9) or ``redis`` (shared by several crawler processes).
FOCUSED_FRONTIER_STORE = "auto"
#: A durable store commits every this many operations...
FOCUSED_FRONTIER_COMMIT_OPS = 1000
#: ...or this many seconds, whichever comes first: what a kill -9 can lose
#: (and fetch again after the resume).
FOCUSED_FRONTIER_COMMIT_SECONDS = 1.0
#: Where the Redis frontier lives (``FOCUSED_FRONTIER_STORE=redis``, or ``auto`` when set):
#: ``redis://HOST:6379/0``, as scrapy-redis names it (its ``REDIS_PARAMS`` apply too).
REDIS_URL = ""
#: Keys of the shared frontier are ``<prefix>:frontier:...``; empty: the spider's name.
#: Workers of one crawl use the same prefix; a new crawl, a new prefix.
FOCUSED_REDIS_PREFIX = ""
#: A popped URL whose worker neither acknowledged nor renewed it for this many seconds (the worker was
#: killed, or blocked or cut off from Redis that long) goes back to waiting for another worker. A live
#: worker renews its leases every third of this, so a slow download stays with it.
FOCUSED_REDIS_LEASE_SECONDS = 30.0
#: Redis unreachable: retry with backoff this long, then stop the worker with one error line.
FOCUSED_REDIS_RETRY_SECONDS = 60.0
#: An idle worker waits this long for new URLs before it closes (it always waits while others hold leases);
#: a worker started without seeds waits this long for URLs pushed to ``<prefix>:start_urls``.
FOCUSED_REDIS_IDLE_SECONDS = 0.0
#: An idle worker of a shared frontier looks for new URLs (waiting, or pushed to ``<prefix>:start_urls``)
#: this often.
FOCUSED_REDIS_POLL_SECONDS = 0.5
#: With a Redis frontier, the workers' apprentices learn together: instances and verdicts in Redis, one
#: trainer (the holder of a lock) per batch of FOCUSED_APPRENTICE_BATCH pages of all workers, models
#: published under ``<prefix>:apprentice:model``. False: each worker learns from its own pages.
FOCUSED_APPRENTICE_SHARED = True
#: The trainer's lock expires this many seconds after its holder stops renewing it (died): another worker takes over.
FOCUSED_APPRENTICE_LOCK_SECONDS = 10.0
#: Every worker looks for a newer model in Redis this often (and at each page).
FOCUSED_APPRENTICE_POLL_SECONDS = 1.0
#: Links taken from one page at most (the first ones in document order; 0 = no cap). The ``<a href>``
#: left unread beyond the cap are counted in ``focused/links/over_cap``.
FOCUSED_MAX_LINKS_PER_PAGE = 3000
#: Worker processes that read pages (parse, outlinks, fingerprint, critic, link ids) while the crawl
#: process does the I/O (focused.analysis.worker); 0 reads them in the crawl process; ``auto``: 1 when the
#: process may use two or more cores (started after the crawl's first 100 pages), else 0.
FOCUSED_ANALYSIS_WORKERS = "auto"
#: Allocations between collections of Python's youngest generation (its default is 700); when the engine
#: starts, the objects of the start-up are frozen out of the collector's walks (focused.extensions.gctuning). 0 leaves
#: the collector as Python sets it.
FOCUSED_GC_THRESHOLD = 10000
#: Downloaded pages that may wait to be scored (their links not yet in the frontier) while the scheduler
#: still hands out requests; past it, no new download starts until one is through. It bounds how far the
#: fetch order lags best-first. 0: strict best-first (no download starts while any page awaits scoring;
#: the ``replay`` profile's value, so that benchmarks compare orders, not timings).
FOCUSED_MAX_UNSCORED_PAGES = 16
#: Requests handed to the downloader and not yet sent (waiting for a site's DOWNLOAD_DELAY, a free connection
#: or its robots.txt) at which the scheduler stops handing out more until one is sent: a request waits there
#: with the priority it had when it left the frontier, while the pages fetched meanwhile bring better links.
#: 0: no limit (Scrapy's own: up to CONCURRENT_REQUESTS in the downloader; the ``replay`` profile's value,
#: where nothing waits for a delay).
FOCUSED_MAX_QUEUED_DOWNLOADS = 2
#: Waiting URLs the frontier keeps at most (0 = no cap): beyond it the lowest-priority waiting URLs are
#: dropped (counted in ``focused/frontier/dropped``; they stay seen, so they are not added again).
FOCUSED_FRONTIER_MAX_SIZE = 1_000_000
#: The interest-ratio factors of ``-a strategy=intelligent`` (Aggarwal et al. 2001), comma-separated:
#: ``content``, ``url``, ``link``, ``sibling``; ``intelligent:FACTOR`` overrides it.
FOCUSED_INTELLIGENT_FACTORS = "content,url,link,sibling"
#: Significance threshold t (standard deviations) of the content and URL-token ratios.
FOCUSED_INTELLIGENT_SIGNIFICANCE = 2.0
#: Our extension: K counts a page as Pr(c*|page) of a satisfying page (and the rest of a non-satisfying one)
#: instead of thresholding it at FOCUSED_RELEVANCE_THRESHOLD (the paper; a predicate's 1/0 is the same either way).
FOCUSED_INTELLIGENT_SOFT = False
#: Re-score every waiting URL (and rebalance the factor weights) every this many labelled pages (0: never).
FOCUSED_INTELLIGENT_RESCORE_EVERY = 10
#: Start from the statistics K saved by an earlier intelligent crawl (``-a knowledge=FILE``, .npz).
FOCUSED_INTELLIGENT_LOAD = ""
#: Save the statistics K here when the crawl closes (``-a save_knowledge=FILE``, .npz, never a pickle).
FOCUSED_INTELLIGENT_SAVE = ""

#: Markines classifiers (``-a strategy=markines:{nb,svm,cosine}-{link,page}``, docs/markines.md).
#: A model file from ``focused train-markines`` (``-a markines=FILE``): frozen offline classifiers;
#: empty: learn online from the critic's verdicts on fetched targets.
FOCUSED_MARKINES_MODEL = ""
#: Online learning: feature selection ``df`` or ``mi``, top K words, refit every BATCH new instances once
#: there are MIN_INSTANCES (of both classes); a target is on topic when Pr(c*|v) >= THRESHOLD.
FOCUSED_MARKINES_SELECTION = "df"
FOCUSED_MARKINES_K = 500
FOCUSED_MARKINES_BATCH = 200
FOCUSED_MARKINES_MIN_INSTANCES = 200
FOCUSED_MARKINES_THRESHOLD = 0.5

#: The job directory (like ``JOBDIR``, and it wins over it): frontier, apprentice checkpoints and which crawl
#: database the job writes. Under Scrapyd, which gives every job a new ``JOBDIR`` of its own, this is what makes a job
#: resumable: schedule again with the same ``-d jobdir=DIR`` and it continues (docs/deploy.md). Empty: ``JOBDIR``.
FOCUSED_JOBDIR = ""
#: Write the crawl's pages to WARC files in this folder (``<job>-<NNNNN>.warc.gz``: a ``request`` and a ``response``
#: record per page, headers and body as Scrapy received them, the body decompressed; docs/output.md). A file being
#: written ends in ``.open`` and is renamed when complete. Empty: no WARC files.
FOCUSED_WARC = ""
#: A WARC file is completed, and the next one begun, once it holds this many (compressed) bytes.
FOCUSED_WARC_MAX_BYTES = 1_000_000_000
#: Which pages go to the WARC files: ``all`` the pages the crawl labels (those of the crawl database), or
#: ``relevant``, only those the critic (or the predicate) judged relevant.
FOCUSED_WARC_PAGES = "all"

#: The most bytes of arrays one model, checkpoint or knowledge file may hold (all its arrays together). A file is
#: checked against it from its zip directory and array headers before anything is decompressed or allocated, so that
#: a small file declaring a huge array is refused in one line (the shipped models hold about 13 MB).
FOCUSED_MODEL_MAX_BYTES = 1 << 30

#: Seconds the reading of one page may take (parse, links, verdict); a page still being read then is skipped and
#: counted (``focused/pages/skipped_slow``) instead of holding the crawl. A page-analysis worker bounds all of the
#: reading; in the crawl process it bounds the streaming parse of deeply nested pages. 0: no limit.
FOCUSED_PAGE_TIME_BUDGET = 30.0

#: A topic from example pages (``-a examples=DIR|URL,URL|FILE``, docs/topic.md): a folder of pages, comma-separated
#: URLs, or a file listing URLs or paths one a line. The crawl trains a critic from them at start (the topic is
#: ``-a topic=NAME``, else the folder's or file's name) and, without seeds, starts from their URLs. Empty: none.
FOCUSED_EXAMPLES = ""
#: Where critics trained from examples are kept, named by a hash of the example files' content and the example
#: URLs (not their pages, which change between fetches): a resumed crawl or a second worker on the same machine
#: reuses the file instead of training again, without fetching the URLs. The shipped corpora's pages are kept
#: there as text too, read by the next critic instead of the corpora.
FOCUSED_EXAMPLES_CACHE = "crawls/examples"
#: The unlabelled background of a critic from examples, comma-separated: ``webkb``, ``wiki`` (the corpora folder,
#: ``$FOCUSED_CORPORA``), folders of pages, crawl databases or WARC files (pages of the kind the crawl will meet).
FOCUSED_EXAMPLES_BACKGROUND = "webkb,wiki"
#: The most background pages sampled for a critic from examples from the shipped corpora, and as many again from
#: the other sources (folders, crawl databases, WARC files).
FOCUSED_EXAMPLES_MAX_BACKGROUND = 3000
#: Fix glibc's mmap threshold in the crawl process and its page-analysis worker (focused.malloc): large blocks are
#: mapped on their own and returned to the kernel when freed, instead of leaving holes in the heaps as glibc's
#: moving threshold does; the apprentice's fits and the re-scores take their temporaries from the heaps while they
#: run, and trim them after. No effect where the C library is not glibc. False: the allocator as glibc sets it.
FOCUSED_MALLOC_TUNING = True
