"""Every limit of the service, in one place (docs/contract.md §5 and §6).

The argument models, the domain, the protocol formatter and the admin API read
their limits from here, so a figure in the contract has exactly one home.
"""

from __future__ import annotations

# -- Per-call deadline ---------------------------------------------------------------
DEADLINE_S = 3.0  # every MCP call; the database statement timeout stays under it
ADMIN_DEADLINE_S = 5.0  # admin API calls (a few more statements, still interactive)
LAMBDA_RESERVE_S = 0.5  # left to answer before Lambda itself gives up
MIN_DEADLINE_S = 0.05

# -- Database connections (db.py); a black-holed connection must fail, not hang ------
# The front door's calls to the user pool's token and revocation endpoints, at most.
SIGNIN_POOL_TIMEOUT_S = 5.0
DB_POOL_TIMEOUT_S = 5.0  # waiting for a pooled connection, at most (a call's deadline is less)
DB_CONNECT_TIMEOUT_S = 2  # libpq connect_timeout (whole seconds; libpq's minimum is 2)
DB_KEEPALIVES_IDLE_S = 3  # silence before the first TCP keepalive probe
DB_KEEPALIVES_INTERVAL_S = 1
DB_KEEPALIVES_COUNT = 2  # unanswered probes before the connection is dropped
DB_TCP_USER_TIMEOUT_MS = 4000  # data sent but unacknowledged this long: connection dropped

# -- Audit publishing (audit.py, after_response.py; docs/contract.md §5) -------------
# After the response, a change's events are published within these bounds, or left
# to the sweeper: the publishing transaction's deadline, and PutEvents' timeouts.
AUDIT_PUBLISH_DEADLINE_S = 2.0
EVENTS_CONNECT_TIMEOUT_S = 1.0
EVENTS_READ_TIMEOUT_S = 1.0
EVENTS_MAX_ATTEMPTS = 2  # PutEvents tries, the first included
# The sweeper leaves younger rows to the request that wrote them (longer than the
# bounds above); rows older than this are published by its next run.
AUDIT_SWEEP_MIN_AGE_S = 10
AUDIT_SWEEP_BATCH = 500  # rows the sweeper claims, publishes and marks in one transaction
AUDIT_SWEEP_RESERVE_MS = 5000  # the sweeper starts no batch this close to its timeout
EVENTS_PUT_MAX_ENTRIES = 10  # EventBridge PutEvents takes at most 10 entries a call
AFTER_RESPONSE_QUEUE = 1000  # invocations waiting for the local worker; beyond: the sweeper
AFTER_RESPONSE_BATCH = 50  # waiting invocations the local worker runs together (one transaction)
AFTER_RESPONSE_LINGER_S = 0.2  # how long the local worker lets a batch gather
EXTENSION_DEADLINE_RESERVE_S = 0.5  # the extension stops waiting this before the deadline

# -- Embeddings (domain/embedding.py, data/bedrock_embedder.py; docs/store.md) --------
# A query's vector is asked for inside a search call's deadline, so Bedrock gets one
# retry and short timeouts; what does not answer in time is a lexical search, flagged.
EMBED_CONNECT_TIMEOUT_S = 0.5
EMBED_READ_TIMEOUT_S = 1.0
EMBED_MAX_ATTEMPTS = 2  # InvokeModel tries, the first included (botocore standard mode)
# Titan Text Embeddings V2 reads at most this many characters and tokens. Its tokenizer
# is not public, so a text is cut to an estimate: an ASCII token covers three characters
# or more (English averages four to five), any other character may be a token alone.
TITAN_MAX_CHARS = 50_000
TITAN_MAX_TOKENS = 8_192
TITAN_ASCII_CHARS_PER_TOKEN = 3

# -- The migrations function (a CloudFormation custom resource) -------------------------
CFN_REASON_MAX_CHARS = 3000  # CloudFormation caps the whole response body at 4 KB
MIGRATIONS_TIMEOUT_MARGIN_S = 10.0  # answer FAILED this long before Lambda would kill it
MIGRATIONS_CONNECT_TIMEOUT_S = 20  # a paused Aurora Serverless v2 instance takes ~15 s to resume

# -- Response budgets (bytes are counted on the serialized JSON-RPC response) ---------
RESPONSE_MAX_BYTES = 8192
SEARCH_MAX_HITS = 8
SEARCH_EXCERPT_BYTES = 500
# Below this an excerpt carries too little to be worth a hit's slot; drop hits instead.
MIN_EXCERPT_BYTES = 48
LIST_MAX_ITEMS = 50
LIST_DEFAULT_ITEMS = 20
TITLE_MAX_BYTES = 200

# -- Integers as the database stores them ----------------------------------------------
# A revision is an SQL integer (int4), an audit event id a bigint. A client's number
# outside its column's range is refused as invalid_argument at the boundary (the
# argument models, addresses.py, the admin query models), before any SQL sees it.
REVISION_MAX = 2**31 - 1  # PostgreSQL integer
BIGINT_MAX = 2**63 - 1  # PostgreSQL bigint

# -- Arguments and content -----------------------------------------------------------
URI_MAX_CHARS = 1024
PATH_MAX_SEGMENTS = 8  # of a memory:// path (addresses.py)
PATH_SEGMENT_MAX_CHARS = 64
PATH_MAX_BYTES = 256  # a whole path, UTF-8, after NFC
SOURCE_MAX_CHARS = 256
CONTEXT_ARG_MAX_CHARS = 512
CURSOR_MAX_CHARS = 2048
QUERY_MAX_CHARS = 512
QUERY_MAX_BYTES = 2048
SOURCE_MAX_BYTES = 1024  # a source, UTF-8 (at most SOURCE_MAX_CHARS characters too)
CONTENT_MAX_BYTES = 65536
FACT_MAX_BYTES = 4096
# A remember whose create races another key's create on the same address is retried
# (merged into the record that won) at most this many times, never merged twice.
REMEMBER_ATTEMPTS = 4
READ_DEFAULT_BYTES = 16384
READ_MAX_BYTES = 65536
HISTORY_LIMIT = 50
TIME_MAX_CHARS = 64  # an RFC 3339 time argument
EXPIRY_MAX_YEARS = 10  # expires_at at most this far ahead
EXPIRE_SWEEP_BATCH = 500  # expired records the sweeper purges in one transaction

# -- The session-start briefing (docs/contract.md, memory_brief) -----------------------
BRIEF_DEFAULT_BYTES = 4096  # the whole serialized response
BRIEF_MIN_BYTES = 1024
BRIEF_MAX_BYTES = 16384
BRIEF_PINNED_ITEMS = 20  # pinned records read (with their content) before the budget
BRIEF_RECENT_ITEMS = 20  # recent changes read
BRIEF_SKILL_ITEMS = 20  # skills read
BRIEF_CONTENT_BYTES = 4096  # a pinned record's content read at most (then cut to fit)
INSTRUCTIONS_MAX_BYTES = 1200  # the server's instructions in initialize
IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9_.:-]{8,128}$"
CONTEXT_ID_MAX_BYTES = 128

# -- Skills as prompts, completions (docs/contract.md §7) ------------------------------
PROMPTS_PAGE_ITEMS = 50  # prompts/list reads this many per page; the budget may send fewer
PROMPT_DESCRIPTION_MAX_BYTES = 1024  # a listed prompt's description (front matter)
SKILL_HEAD_CHARS = 4096  # of a SKILL.md read for its front matter when listing
PROMPT_ARGUMENTS_MAX = 16  # arguments a SKILL.md may declare
PROMPT_ARGUMENT_MAX_BYTES = 4096  # one argument value given to prompts/get
COMPLETION_MAX_VALUES = 20  # completion/complete values per answer
COMPLETION_PREFIX_MAX_BYTES = 256  # a longer typed prefix completes to nothing

# -- Search work bounds (docs/store.md, docs/performance.md) -----------------------------
# Records a search may fetch and score before it stops with the best of them, and
# record-term pairs it may score (a query of many terms fetches fewer records). A
# search that can prove nothing unfetched could enter its top results stops earlier.
SEARCH_FETCH_BUDGET = 800
SEARCH_SCORE_BUDGET = 4000
# A hit's excerpt is cut (ts_headline, sql/hydrate_hits.sql) from the first this many
# characters of its body, as 25 to 70 words in at most two fragments, before the
# response budget trims it to SEARCH_EXCERPT_BYTES.
SEARCH_EXCERPT_SOURCE_CHARS = 20_000
SEARCH_EXCERPT_WORDS = (25, 70)

# -- Search scoring (infra/schema/50_search_index.sql, 60_search.sql; docs/store.md) ----
# Put into the schema files by migrate.py when it applies them; a changed value
# applies them again, and rebuilds the search index, whose entries are banded by BM25.
# BM25's term-frequency saturation (k1) and length normalisation (b), and the
# reference length it normalises to (in term positions): a fixed length rather than
# the collection's average, so a term's factor in a record is known when it is written.
SEARCH_BM25_K1 = 1.2
SEARCH_BM25_B = 0.75
SEARCH_BM25_REFERENCE_LENGTH = 64
# The bands of the BM25 factor in the index: each value is a band's ceiling and the
# next band's floor (ascending; the top band's ceiling is k1 + 1, the factor's own).
# A search fetches the highest bands first and stops once no unfetched record can
# enter its top results.
SEARCH_TIER_CEILINGS = (0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.7)
# A record updated now scores this much more, halving every this many days: a
# tie-breaker between near-equal matches, never enough to outweigh a matched term.
SEARCH_PRIOR_WEIGHT = 0.25
SEARCH_PRIOR_HALF_LIFE_DAYS = 60
# A word that at most this many records of the caller's view hold is fetched in one
# segment, all its bands at once.
SEARCH_RARE_WORD_RECORDS = 128
# Segments a search statement fetches: few while fewer than the wanted hits have
# scores (the stop rule needs them), more after (a statement's fixed cost then weighs
# more than the records of a segment that would not have been needed).
SEARCH_SEGMENTS_FIRST = 2
SEARCH_SEGMENTS_AFTER = 6

# -- Hybrid recall (docs/store.md, "Search by meaning") -------------------------------
# Candidates each side of a hybrid search offers the fusion (words: BM25; meaning:
# cosine over the embeddings), and the weight of meaning in the fused score (words
# weigh 1 minus it). Each side's scores are scaled first (operations/memory_search.py,
# fuse); bench/hybrid_bench.py measured the weight on the project's own sets, alone
# and beside 8,000 other notes: every weight from 0.2 to 0.45 beat words alone on all
# four, 0.35 is the middle (docs/performance.md, "A words scale that knows the query").
SEARCH_FUSION_CANDIDATES = 50
SEARCH_FUSION_MEANING_WEIGHT = 0.35
# The fewest nearest vectors the HNSW index proposes to the meaning side before the
# view's predicate keeps the caller's (hnsw.ef_search): twice the candidates it wants,
# and more when the view is a smaller share of the index (up to pgvector's largest
# hnsw.ef_search, 1,000). When fewer than SEARCH_FUSION_CANDIDATES of them are in the
# view, the exact scan of the view answers instead (infra/schema/65_search_vectors.sql).
# 0 would always scan exactly. 100 rather than 200: at 10,000 records the 50 nearest
# held 0.92 of the exact 50 (0.965 of the exact 10) against 0.99, for 4 to 5 ms less
# a search over HTTP (docs/performance.md, "Hybrid recall").
SEARCH_MEANING_INDEX_CANDIDATES = 100
# Records the embedder takes from the queue at a time (one call of the port's embed a
# batch; both adapters then run one text at a time), and the tries a record gets
# before only a backfill takes it again.
EMBED_BATCH = 32
EMBED_QUEUE_ATTEMPTS = 5
# Records one run of the migrations function's embed task embeds at most (Titan takes
# one text a call: about 4 minutes of its 10 at 20 records/s).
EMBED_TASK_RECORDS = 5000

# -- Admin API (docs/admin.md) ------------------------------------------------------
ADMIN_CONTEXT_MEMBERS_MAX = 256  # members named in one PUT of a private context
ADMIN_AUDIT_DEFAULT_ITEMS = 50  # GET /audit, one page
ADMIN_AUDIT_MAX_ITEMS = 200
# An invitation waits this long for its invitee to accept (then it is void).
ADMIN_INVITATION_TTL_S = 7 * 24 * 3600
# Pending invitations a workspace may hold at once (a bound on what one admin adds).
ADMIN_INVITATIONS_MAX = 1000
ADMIN_HANDLE_MAX_CHARS = 64  # an identity's handle (operators, or an invitee's own)

# -- Cursors and cache hints ---------------------------------------------------------
CURSOR_TTL_S = 900
REVISION_TTL_MS = 86_400_000  # an immutable revision: a day in a private cache
CATALOG_TTL_MS = 3_600_000  # server/discover, resource templates: same for everyone
TOOLS_TTL_MS = 60_000  # tools/list depends on the caller's grants

# -- Sign-in: the authorizer, discovery and registration (docs/contract.md §1, §2) ----
TOKEN_LEEWAY_S = 30  # clock skew allowed on a token's exp, nbf and iat
JWKS_TTL_S = 3600  # the pool's key set is fetched again once it is this old
JWKS_REFETCH_MIN_S = 60  # an unknown kid fetches the key set again at most this often
JWKS_FETCH_TIMEOUT_S = 3.0
# API Gateway keeps an authorizer decision this long, keyed on the Authorization header
# and the route; revocation does not wait for it (the handler checks membership).
AUTHORIZER_CACHE_TTL_S = 300
# A registered client's last use is written at most this often per MCP function
# container; only a member's successful call is a use (docs/deploy.md).
CLIENT_TOUCH_EVERY_S = 86_400
REGISTERED_CLIENT_IDLE_DAYS = 30  # default; the template parameter overrides it
# A registered client no member has used yet (an abandoned sign-in, or one that never
# reached a workspace) goes this long after registering, at the next sweep, which
# runs every CLIENT_SWEEP_EVERY_S (template: SweepClients): gone within 55 minutes.
REGISTERED_CLIENT_UNUSED_GRACE_S = 2_400
CLIENT_SWEEP_EVERY_S = 900
# A registration holds a place under the ceiling while it creates its client; a place
# still held this long after (the function died midway) is given back by the sweep.
REGISTRATION_RESERVATION_TTL_S = 600
# Cognito's default quota of app clients per user pool (its "Quotas on resource number
# and size"; adjustable in Service Quotas). The template parameter UserPoolAppClientQuota
# overrides it for a pool whose quota was raised.
USER_POOL_APP_CLIENT_QUOTA = 1_000
# App clients registration never takes: agent keys, the people client and the example
# agent client. Registered clients stop at quota - this (600 by default).
APP_CLIENTS_RESERVED = 400
# Counted for every well-formed attempt, before anything is created: a source over it
# is refused without touching the total. A source is an IPv4 address or an IPv6 /64.
REGISTRATIONS_PER_SOURCE_PER_HOUR = 10
# In total, counted only for registrations that succeed: it takes 20 sources at their
# own limit to use it up, and the clients it lets through in any 55 minutes (at most
# two hourly windows, 400) stay under the ceiling even if no member ever uses them.
REGISTRATIONS_PER_HOUR = 200
REGISTRATION_BODY_MAX_BYTES = 16_384
REGISTRATION_MAX_REDIRECT_URIS = 10
REDIRECT_URI_MAX_CHARS = 1024  # Cognito's limit on a callback URL
CLIENT_NAME_MAX_CHARS = 64
SIGNIN_ACCESS_TOKEN_MINUTES = 60  # registered clients' tokens (Cognito: 5 min to 1 day)
SIGNIN_REFRESH_TOKEN_DAYS = 30
# A token presented for revocation longer than this is no token the pool issued (its
# refresh tokens are under 2,000 characters): answered as unknown, not handed on.
REVOKE_TOKEN_MAX_CHARS = 8_192
AUTHORIZATION_CODE_TTL_S = 300  # Cognito's authorization codes live five minutes
# How long a consent page's Approve/Deny stays good (its signed token and cookie).
CONSENT_TTL_S = 600
CONSENT_SECRET_MIN_CHARS = 32  # the key that signs consent tokens
# Client ID Metadata Documents (signin.cimd): the draft suggests 5 KB at most; a fetch
# gives up after this many seconds in all, however slowly the bytes come.
CIMD_MAX_BYTES = 5_120
CIMD_FETCH_TIMEOUT_S = 3.0
CIMD_CACHE_DEFAULT_S = 300  # a document whose answer has no Cache-Control max-age
CIMD_CACHE_MAX_S = 86_400  # a longer max-age is cut to this
CIMD_FAILURE_CACHE_S = 30  # a refused URL is not fetched again before this
CIMD_CACHE_ENTRIES = 512  # documents kept per container
# The front door's state for the pool and its wrapped authorization codes: a sign-in
# at the pool (a password, a second factor) may take this long.
SIGNIN_STATE_TTL_S = 1_800

# -- Prompts -------------------------------------------------------------------------
PROMPTS_TTL_MS = 60_000  # prompts/list: the caller's view of skills, which changes
