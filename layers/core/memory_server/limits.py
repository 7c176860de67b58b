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

# -- Response budgets (bytes are counted on the serialized JSON-RPC response) ---------
RESPONSE_MAX_BYTES = 8192
SEARCH_MAX_HITS = 8
SEARCH_EXCERPT_BYTES = 500
# Below this an excerpt carries too little to be worth a hit's slot; drop hits instead.
MIN_EXCERPT_BYTES = 48
LIST_MAX_ITEMS = 50
LIST_DEFAULT_ITEMS = 20
TITLE_MAX_BYTES = 200

# -- Arguments and content -----------------------------------------------------------
URI_MAX_CHARS = 1024
SOURCE_MAX_CHARS = 256
CONTEXT_ARG_MAX_CHARS = 512
CURSOR_MAX_CHARS = 2048
QUERY_MAX_CHARS = 512
QUERY_MAX_BYTES = 2048
CONTENT_MAX_BYTES = 65536
FACT_MAX_BYTES = 4096
READ_DEFAULT_BYTES = 16384
READ_MAX_BYTES = 65536
HISTORY_LIMIT = 50
IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9_.:-]{8,128}$"
CONTEXT_ID_MAX_BYTES = 128

# -- Search work bounds (docs/store.md, docs/performance.md) -----------------------------
# Records a search may fetch and score before it stops with the best of them, and
# record-term pairs it may score (a query of many terms fetches fewer records). A
# search that can prove nothing unfetched could enter its top results stops earlier.
SEARCH_FETCH_BUDGET = 800
SEARCH_SCORE_BUDGET = 4000

# -- Cursors and cache hints ---------------------------------------------------------
CURSOR_TTL_S = 900
REVISION_TTL_MS = 86_400_000  # an immutable revision: a day in a private cache
CATALOG_TTL_MS = 3_600_000  # server/discover, resource templates: same for everyone
TOOLS_TTL_MS = 60_000  # tools/list depends on the caller's grants
