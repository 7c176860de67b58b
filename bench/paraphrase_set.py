"""The paraphrase recall set: a team's memory, asked about in other words.

``bench/recall_set.py`` asks mostly with the note's own names and numbers; here each
question says what its memory says in different words, as people do when they forget
how a rule or a decision was written down. A seeded generator (templates and
vocabularies in this file, no network, no model) writes a team workspace's notes:
deploy rules, people's working preferences, incidents, vendor contracts, architecture
decisions, runbooks, customer requests and team rituals. Every vocabulary entry is a
pair, the wording a note uses and the wording a question uses for the same thing,
chosen to share no content word. A note's distinguishing slots (a deploy rule's
system and time window, an incident's system and symptom) are unique within its kind,
and other notes of the same kind share one slot with it, so a question is answered by
one note and the others compete with it.

:func:`word_overlap` measures how many of a question's content words (lowercase, a
light stemmer, a stop list) occur in its evidence; :func:`overlap_report` sums it up
over the set, and :data:`MAX_OVERLAP` bounds each question (a generated question over
it is dropped). ``python -m bench.paraphrase_set`` prints the figures; ``--write FILE``
writes the set as JSON lines. :func:`load_paraphrase_set` is what a benchmark calls:
the same :class:`~bench.recall_set.RecallSet` as the recall set, checked against
:data:`CHECKSUM`, so ``bench/recall_bench.py``'s loader writes it as it is.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from .recall_set import COLLEAGUES, FRAMINGS, READER, Memory, Question, RecallSet

SEED = 20260301
# SHA-256 of the canonical JSON of generate(SEED); a changed generator changes it.
CHECKSUM = "a92138a4a320321513224c4e7fe4d8da10cc4743175c8ac02e89d2f63ef36979"
START = date(2024, 3, 4)
END = date(2026, 2, 27)
# A question sharing more than this share of its content words with its evidence is
# not a paraphrase; the generator drops it.
MAX_OVERLAP = 0.34

Pair = tuple[str, str]  # (as a note says it, as a question says it)


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


SYSTEMS: tuple[Pair, ...] = (
    ("checkout API", "payment endpoint"),
    ("login service", "sign-in backend"),
    ("billing worker", "invoicing job"),
    ("image resizer", "thumbnail generator"),
    ("notification queue", "push message backlog"),
    ("staging database", "pre-production Postgres"),
    ("mobile app", "iPhone and Android client"),
    ("data warehouse", "analytics store"),
    ("content delivery network", "CDN"),
    ("Kafka cluster", "event broker"),
    ("CI runners", "build machines"),
    ("feature flag service", "toggle system"),
    ("DNS zone", "domain records"),
    ("email relay", "outgoing mail server"),
    ("admin console", "internal back-office UI"),
    ("cron scheduler", "timed jobs host"),
    ("API gateway", "front door proxy"),
    ("secrets vault", "credential store"),
    ("search index", "Elasticsearch"),
    ("customer portal", "client-facing web app"),
)
WINDOWS: tuple[Pair, ...] = (
    ("on Friday afternoons", "at the end of the week"),
    ("during the December freeze", "over Christmas"),
    ("after 16:00", "late in the day"),
    ("during month-end close", "while finance books the quarter"),
    ("while an incident is open", "in the middle of an outage"),
    ("on weekends", "Saturday or Sunday"),
    ("before 09:00", "early morning"),
    ("on public holidays", "bank-holiday"),
)
APPROVERS: tuple[Pair, ...] = (
    ("the on-call lead", "whoever holds the pager"),
    ("the engineering manager", "our EM"),
    ("the CTO", "chief technology officer"),
    ("two senior engineers", "a pair of experienced devs"),
    ("the security lead", "head of infosec"),
    ("the product owner", "PM"),
    ("the release captain", "person running shipping that week"),
)
# (as a note says it, the question, with {name} for the person)
PREFERENCES: tuple[Pair, ...] = (
    ("prefers written status updates over meetings", "would {name} rather get progress by message"),
    ("does not take calls before 10:00", "is {name} okay with an early phone meeting"),
    ("is vegetarian", "does {name} eat meat"),
    ("drinks only decaf", "can {name} have caffeine"),
    ("wants review comments in private, never in channels", "does {name} mind public criticism"),
    ("works remotely from Lisbon on Fridays", "is {name} at the office at the end of the week"),
    ("uses British spelling in documentation", "does {name} write color or colour"),
    ("is allergic to peanuts", "does {name} have a nut allergy"),
    ("hates being paged for warnings", "is {name} fine being woken up by non-critical alerts"),
    ("prefers Python over Go for tooling", "{name}'s favourite language for internal scripts"),
    ("keeps Wednesdays free of meetings", "which weekday has no calls in {name}'s diary"),
    ("wants agendas sent a day ahead", "does {name} expect the outline in advance"),
    (
        "likes to pair program on tricky bugs",
        "does {name} enjoy working side by side on hard defects",
    ),
    ("reads Slack only twice a day", "how fast does {name} answer chat"),
    ("takes August off every year", "is {name} away in summer"),
    ("wants estimates in days, not story points", "how does {name} want tickets sized"),
    ("prefers a standing desk near the window", "where does {name} like to sit"),
    ("does not drink alcohol", "will {name} want wine at the offsite dinner"),
    ("likes one-on-ones while walking outside", "would {name} fancy strolling during our 1:1"),
    ("wants design docs before any code", "does {name} need a written proposal first"),
)
SYMPTOMS: tuple[Pair, ...] = (
    ("returned 502 errors", "threw bad gateway responses"),
    ("ran out of disk", "storage filled up"),
    ("latency rose to 4 seconds", "got really slow"),
    ("dropped messages", "lost events"),
    ("crashed in a restart loop", "kept rebooting"),
    ("served stale data", "showed outdated results"),
    ("leaked memory", "RAM kept growing"),
    ("rejected valid tokens", "logged people out"),
    ("sent duplicate emails", "mailed customers twice"),
    ("stopped accepting writes", "went read-only"),
)
CAUSES: tuple[Pair, ...] = (
    ("an expired TLS certificate", "cert that lapsed"),
    ("a bad configuration push", "broken settings change"),
    ("a runaway batch job", "scheduled task gone wild"),
    ("an outage at the cloud provider", "AWS having problems"),
    ("a missing database index", "unindexed query"),
    ("a DNS misconfiguration", "wrong name records"),
    ("a full connection pool", "exhausted Postgres connections"),
    ("a clock skew between hosts", "servers disagreeing about time"),
    ("a library upgrade", "bumped dependency"),
    ("a traffic spike from a marketing campaign", "promo that brought a rush of visitors"),
)
FIXES: tuple[Pair, ...] = (
    ("rolled back to the previous build", "reverted the release"),
    ("added a rate limit", "throttled requests"),
    ("doubled the instance size", "gave it bigger machines"),
    ("rotated the certificate", "renewed the cert"),
    ("restarted the pods one by one", "bounced the containers gradually"),
    ("added the missing index", "created an index"),
    ("increased the pool to 200", "allowed more Postgres connections"),
    ("failed over to the replica", "switched to the standby"),
)
# (vendor, service as a note says it, as a question says it)
VENDORS: tuple[tuple[str, str, str], ...] = (
    ("Sentry", "error tracking", "crash reporting"),
    ("Datadog", "observability", "monitoring and metrics"),
    ("Postmark", "transactional email", "automated mail sending"),
    ("Stripe", "payment processing", "charging cards"),
    ("Zendesk", "customer support ticketing", "helpdesk"),
    ("Zoom", "video conferencing", "online calls tool"),
    ("Checkr", "background checks", "candidate screening"),
    ("CleanCo", "office cleaning", "janitorial crew"),
    ("Baker Lane LLP", "legal counsel", "outside lawyers"),
    ("Cobalt Labs", "penetration testing", "external hackers auditing us"),
    ("Hetzner", "bare-metal hosting", "rented servers"),
    ("Lokalise", "translation", "localisation agency"),
    ("Deel", "payroll", "salaries abroad"),
    ("1Password", "password manager", "shared credentials tool"),
    ("Fastly", "edge caching", "CDN"),
    ("PagerDuty", "on-call paging", "alert escalation app"),
    ("Figma", "design tooling", "mockup software"),
    ("Snowflake", "data warehousing", "analytics database"),
    ("GitHub", "source hosting", "where our repos live"),
    ("Okta", "single sign-on", "SSO"),
)
TERMS: tuple[Pair, ...] = (
    ("one-year term", "twelve months"),
    ("two-year term", "24 months"),
    ("three-year term", "36 months"),
)
NOTICES: tuple[Pair, ...] = (
    ("30 days' notice", "a month"),
    ("60 days' notice", "two months"),
    ("90 days' notice", "a quarter"),
)
# (what a note records, the question, why as a note says it)
DECISIONS: tuple[tuple[str, str, str], ...] = (
    (
        "Use PostgreSQL row-level security for tenant isolation",
        "enforce customer separation inside the database",
        "one predicate everywhere is easier to audit than filters in every query",
    ),
    (
        "Move cron jobs to the event bus",
        "switch scheduled tasks to messaging",
        "retries were invisible and failures went unnoticed",
    ),
    (
        "Keep every service in one repository",
        "go monorepo",
        "cross-cutting changes needed five pull requests",
    ),
    (
        "Write new backend services in Go",
        "pick golang for fresh backends",
        "static binaries and a fast compiler suit the platform team",
    ),
    (
        "Ship unfinished work behind feature flags instead of long-lived branches",
        "toggle half-done code rather than keep separate branches",
        "merge conflicts cost a day a week",
    ),
    (
        "Store money as integer cents",
        "avoid floats for currency amounts",
        "rounding drift broke invoices",
    ),
    (
        "Adopt OpenTelemetry for tracing",
        "standardise distributed request tracking",
        "vendor-neutral instrumentation lets us switch backends",
    ),
    (
        "Retire MongoDB",
        "stop using the document store",
        "nobody on the team can operate it well",
    ),
    (
        "Serve the frontend from a CDN",
        "host the web app at the edge",
        "first paint was slow outside Europe",
    ),
    (
        "Use UUIDv7 primary keys",
        "time-ordered identifiers",
        "random keys fragmented the indexes",
    ),
    (
        "Run schema migrations before deploys, never during",
        "change tables ahead of shipping",
        "a half-applied migration took the site down",
    ),
    (
        "Put every internal tool behind SSO",
        "require company login for back-office apps",
        "shared passwords leaked in a screenshot",
    ),
    (
        "Pin every dependency version",
        "lock package releases exactly",
        "a transitive upgrade broke the build on a Sunday",
    ),
    (
        "Drop the GraphQL layer for plain REST",
        "abandon the query language API",
        "caching was hard and clients used three fields",
    ),
    (
        "Keep audit logs for seven years",
        "retain the activity trail that long",
        "the banking customers require it contractually",
    ),
    (
        "Run two availability zones, not three",
        "why only a pair of datacenters",
        "the third zone doubled cross-zone traffic cost",
    ),
)
TASKS: tuple[tuple[str, str, str], ...] = (  # (runbook title, question, first step)
    (
        "Rotating the database password",
        "change the Postgres credentials",
        "create the new secret version",
    ),
    (
        "Restoring a deleted customer",
        "bring back an account someone removed",
        "find the tombstone row",
    ),
    (
        "Adding an engineer to the pager rotation",
        "put a newcomer on call",
        "add them to the escalation policy",
    ),
    ("Purging the CDN cache", "flush edge-cached assets", "call the purge endpoint"),
    ("Requesting a production shell", "get a terminal on live servers", "file an access ticket"),
    ("Rebuilding the search index", "reindex Elasticsearch", "pause the indexing consumer"),
    ("Issuing a refund over 500 EUR", "give money back above five hundred euros", "get approval"),
    ("Offboarding a leaver", "remove someone who quit", "revoke their laptop certificate"),
    ("Renewing the wildcard certificate", "extend our TLS cert", "generate a new CSR"),
    ("Scaling the Kafka cluster", "add broker capacity", "rebalance partitions"),
    ("Onboarding a new hire", "set up a fresh starter", "order the laptop two weeks ahead"),
    ("Blocking an abusive IP range", "ban attacking addresses", "edit the WAF rule set"),
    (
        "Exporting a customer's data",
        "hand someone a copy of everything we hold",
        "run the export job",
    ),
    ("Cutting a release branch", "start shipping preparation", "freeze the changelog"),
)
FEATURES: tuple[Pair, ...] = (
    ("an audit log", "activity history of who did what"),
    ("SAML single sign-on", "log in through their identity provider"),
    ("a CSV export", "spreadsheet download"),
    ("data residency in the EU", "keep everything in European datacentres"),
    ("custom roles", "finer permission levels"),
    ("an on-premise install", "run it on their own servers"),
    ("a 99.95% SLA", "uptime guarantee"),
    ("dark mode", "black theme"),
    ("webhooks", "callbacks when things change"),
    ("two-factor authentication", "2FA"),
)
CLIENTS = (
    "Northwind",
    "Globex",
    "Initech",
    "Umbrella Health",
    "Acme Freight",
    "Vandelay Imports",
    "Stark Logistics",
    "Wayne Foods",
    "Hooli",
    "Pied Piper",
    "Soylent",
    "Tyrell Systems",
)
# (ritual as a note records it, the question)
RITUALS: tuple[Pair, ...] = (
    ("The weekly demo is on Thursdays at 15:00", "when do we show off work every seven days"),
    ("Retrospectives happen every second Monday", "how often do we look back on the sprint"),
    ("Standup is async in the #daily thread", "do we meet each morning"),
    ("The all-hands is the first Tuesday of each month", "company meeting schedule"),
    ("Architecture review is Wednesday at 11:00", "design discussion slot"),
    ("Bug bash before every major release", "group testing session"),
    ("Fridays after 15:00 are for learning", "study time"),
    ("The offsite is in Porto each September", "annual team trip"),
    ("Incident reviews within five working days", "postmortem deadline"),
    ("Hack week every November", "innovation days"),
    ("The on-call handover is Mondays at 10:00", "pager swap"),
    ("Quarterly planning starts three weeks before the quarter", "OKR setting kickoff"),
)
FIRST_NAMES = _words(
    "Priya Marco Dana Tomasz Aiko Kwame Lucía Hannah Ibrahim Mei Oskar Fatima Jonas "
    "Ravi Sofia Mateo Yara Erik Nadia Felix Amara Leo Ingrid Hiro"
)
TEAMS: tuple[Pair, ...] = (
    ("payments team", "folks who own billing"),
    ("platform team", "infra group"),
    ("mobile team", "app developers"),
    ("data team", "analytics engineers"),
    ("growth team", "acquisition squad"),
)

# -- word overlap ----------------------------------------------------------------------

STOP_WORDS = frozenset(
    _words(
        """a an the and or but of to in on at for from by with without about as into onto
    over under after before during while is are was were be been being am do does did
    done doing have has had having i me my we our us you your he she it its they them
    their this that these those there here what which who whom whose when where why how
    if then than so not no never any every each all some can could would should will
    shall may might must again one quick check remind remember forgot just also only
    very much many more most other another same such up down out off back still yet
    ever per via s t"""
    )
)


def _stem(word: str) -> str:
    """Plural, past and -ing forms to one stem; a final e goes too (approve, approved)."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def content_words(text: str) -> set[str]:
    """The stems of ``text``'s words that carry meaning (lowercase, stop words out)."""
    return {_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP_WORDS}


def word_overlap(question: str, evidence: Sequence[str]) -> float:
    """The share of the question's content words found in its evidence's text."""
    asked = content_words(question)
    if not asked:
        return 0.0
    found = set().union(*(content_words(text) for text in evidence))
    return len(asked & found) / len(asked)


def memory_text(memory: Memory) -> str:
    return memory.content or "\n".join(memory.facts)


def overlap_report(recall: RecallSet) -> dict[str, float]:
    """Word overlap over the set: mean, median, the share with none, the largest."""
    texts = {m.key: memory_text(m) for m in recall.memories}
    shares = [word_overlap(q.text, [texts[k] for k in q.evidence]) for q in recall.questions]
    return {
        "questions": len(shares),
        "mean": round(statistics.fmean(shares), 4),
        "median": round(statistics.median(shares), 4),
        "none": round(sum(1 for s in shares if s == 0) / len(shares), 4),
        "max": round(max(shares), 4),
    }


# -- the generator ---------------------------------------------------------------------


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.memories: list[Memory] = []
        self.questions: list[tuple[str, tuple[str, ...], str]] = []
        self.paths: set[str] = set()

    def day(self) -> date:
        return START + timedelta(days=self.rng.randrange((END - START).days))

    def note(self, folder: str, slug: str, title: str, lines: list[str]) -> str:
        """A shared note by one of three members' agents; returns its key."""
        key = f"p{len(self.memories) + 1:04d}"
        path, n = f"{folder}/{slug}.md", 2
        while path in self.paths:
            path, n = f"{folder}/{slug}-{n}.md", n + 1
        self.paths.add(path)
        writer = self.rng.choice((READER, *COLLEAGUES))
        heading = self.rng.choice(("# ", "## ", ""))
        body = f"{heading}{title}\n\n" + "\n".join(lines) + "\n"
        d = self.day()
        self.memories.append(
            Memory(key, writer, f"memory://workspace/notes/{path}", d.isoformat(), body)
        )
        return key

    def ask(self, topic: str, text: str, *evidence: str) -> None:
        framed = self.rng.choice(FRAMINGS).format(q=text)
        if not framed.endswith("?"):
            framed += "?"
        texts = [memory_text(m) for m in self.memories if m.key in evidence]
        if word_overlap(framed, texts) <= MAX_OVERLAP:
            self.questions.append((framed, evidence, topic))

    @staticmethod
    def slug(text: str) -> str:
        return "-".join(re.findall(r"[a-z0-9]+", text.lower()))[:48].strip("-")

    def combos(self, *sizes: int) -> list[tuple[int, ...]]:
        """Every combination of indexes into lists of these sizes, shuffled."""
        out: list[tuple[int, ...]] = [()]
        for size in sizes:
            out = [(*c, n) for c in out for n in range(size)]
        self.rng.shuffle(out)
        return out

    # -- kinds of note ---------------------------------------------------------------

    def deploy_rules(self, count: int, asked: float) -> None:
        for s, w in self.combos(len(SYSTEMS), len(WINDOWS))[:count]:
            system, window = SYSTEMS[s], WINDOWS[w]
            approver = self.rng.choice(APPROVERS)
            key = self.note(
                "deploy",
                f"rule-{self.slug(system[0])}-{self.slug(window[0])}",
                f"Deploy rule: {system[0]}",
                [
                    f"No production pushes to the {system[0]} {window[0]}.",
                    f"An exception needs sign-off from {approver[0]}.",
                ],
            )
            if self.rng.random() < asked:
                question = self.rng.choice(
                    (
                        f"who has to okay shipping the {system[1]} {window[1]}",
                        f"can I release the {system[1]} {window[1]}, and whose yes do I need",
                        f"whose approval lets us update the {system[1]} {window[1]}",
                    )
                )
                self.ask("deploy", question, key)

    def preferences(self, people: int, each: int, asked: float) -> None:
        for first in FIRST_NAMES[:people]:
            for p in self.rng.sample(range(len(PREFERENCES)), each):
                said, asked_as = PREFERENCES[p]
                key = self.note(
                    "people",
                    f"{first.lower()}-{self.slug(said)[:24]}",
                    f"{first}: working preferences",
                    [f"{first} {said}."],
                )
                if self.rng.random() < asked:
                    self.ask("preference", asked_as.format(name=first), key)

    def incidents(self, count: int, asked: float) -> None:
        for s, y in self.combos(len(SYSTEMS), len(SYMPTOMS))[:count]:
            system, symptom = SYSTEMS[s], SYMPTOMS[y]
            cause, fix = self.rng.choice(CAUSES), self.rng.choice(FIXES)
            minutes = self.rng.randrange(10, 180, 5)
            key = self.note(
                "incidents",
                f"{self.slug(system[0])}-{self.slug(symptom[0])}",
                f"Incident: the {system[0]} {symptom[0]}",
                [
                    f"For {minutes} minutes the {system[0]} {symptom[0]}.",
                    f"Root cause: {cause[0]}.",
                    f"Mitigation: we {fix[0]}.",
                ],
            )
            if self.rng.random() < asked:
                question = self.rng.choice(
                    (
                        f"why the {system[1]} {symptom[1]} that time",
                        f"what was behind the {system[1]} that {symptom[1]}",
                        f"how did we stop the {system[1]} that {symptom[1]}",
                    )
                )
                self.ask("incident", question, key)

    def contracts(self, asked: float) -> None:
        for vendor, service, service_q in VENDORS:
            term, notice = self.rng.choice(TERMS), self.rng.choice(NOTICES)
            price = self.rng.randrange(4, 240) * 500
            key = self.note(
                "vendors",
                f"contract-{self.slug(vendor)}",
                f"Contract with {vendor}",
                [
                    f"{vendor} provides our {service}: {term[0]}, {price:,} EUR a year.",
                    f"Cancellation requires {notice[0]} before renewal.",
                ],
            )
            for question in (
                f"how much warning to cancel the {service_q} supplier",
                f"what do we pay annually for {service_q}",
                f"how long are we locked in for {service_q}",
            ):
                if self.rng.random() < asked:
                    self.ask("vendor", question, key)

    def decisions(self, asked: float) -> None:
        for n, (decision, decision_q, reason) in enumerate(DECISIONS, start=7):
            key = self.note(
                "decisions",
                f"adr-{n:03d}-{self.slug(decision)[:32]}",
                f"ADR-{n:03d}: {decision}",
                ["Status: accepted.", f"Context: {reason}."],
            )
            for question in (f"why did we decide to {decision_q}", f"reasoning to {decision_q}"):
                if self.rng.random() < asked:
                    self.ask("decision", question, key)

    def runbooks(self, asked: float) -> None:
        for title, task_q, step in TASKS:
            key = self.note(
                "runbooks",
                self.slug(title),
                f"Runbook: {title}",
                [f"1. First, {step}.", "2. Follow the checklist and post in the ops channel."],
            )
            if self.rng.random() < asked:
                self.ask("runbook", f"what are the steps to {task_q}", key)

    def customers(self, count: int, asked: float) -> None:
        for c, f in self.combos(len(CLIENTS), len(FEATURES))[:count]:
            client, feature = CLIENTS[c], FEATURES[f]
            month = self.rng.choice(("March", "June", "September", "December"))
            key = self.note(
                "customers",
                f"{self.slug(client)}-{self.slug(feature[0])}",
                f"{client} request",
                [f"{client} asked for {feature[0]} before their {month} renewal."],
            )
            if self.rng.random() < asked:
                self.ask("customer", f"which account wants {feature[1]}", key)

    def rituals(self, asked: float) -> None:
        for said, asked_as in RITUALS:
            key = self.note("team", self.slug(said)[:40], "Team rhythm", [f"{said}."])
            if self.rng.random() < asked:
                self.ask("ritual", asked_as, key)

    def oncall(self, asked: float) -> None:
        for team, team_q in TEAMS:
            for window, window_q in self.rng.sample(WINDOWS, 2):
                approver = self.rng.choice(APPROVERS)
                key = self.note(
                    "oncall",
                    f"{self.slug(team)}-{self.slug(window)}",
                    f"On-call: {team}",
                    [f"{window[0].capitalize()}, pages for the {team} go to {approver[0]}."],
                )
                if self.rng.random() < asked:
                    self.ask("oncall", f"who gets alerts for the {team_q} {window_q}", key)

    def build(self) -> RecallSet:
        self.deploy_rules(count=90, asked=0.75)
        self.preferences(people=24, each=4, asked=0.7)
        self.incidents(count=90, asked=0.75)
        self.contracts(asked=0.6)
        self.decisions(asked=0.6)
        self.runbooks(asked=0.9)
        self.customers(count=50, asked=0.6)
        self.rituals(asked=0.9)
        self.oncall(asked=0.8)
        # Notes in the order agents wrote them, so a note's key says nothing of its kind.
        order = sorted(range(len(self.memories)), key=lambda n: self.memories[n].day)
        memories = tuple(self.memories[n] for n in order)
        questions = [Question(f"pq{n + 1:04d}", *asked) for n, asked in enumerate(self.questions)]
        self.rng.shuffle(questions)
        return RecallSet(memories, tuple(questions))


def generate(seed: int = SEED) -> RecallSet:
    return Generator(seed).build()


def load_paraphrase_set(*, verify: bool = True) -> RecallSet:
    """The paraphrase set, for a benchmark: the same set on every machine."""
    recall = generate()
    if verify and recall.checksum() != CHECKSUM:
        raise RuntimeError(
            f"the paraphrase set's checksum is {recall.checksum()}, expected {CHECKSUM}: "
            "a changed generator must update CHECKSUM"
        )
    return recall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.paraphrase_set", description=__doc__)
    parser.add_argument("--write", type=Path, help="write the set as JSON lines to this file")
    args = parser.parse_args(argv)
    recall = generate()
    report: dict[str, Any] = {
        "memories": len(recall.memories),
        "checksum": recall.checksum(),
        "expected": CHECKSUM,
        "overlap": overlap_report(recall),
    }
    print(json.dumps(report, indent=2), file=sys.stderr)
    if args.write:
        with args.write.open("w", encoding="utf-8") as out:
            for m in recall.memories:
                out.write(json.dumps({"memory": asdict(m)}, ensure_ascii=False) + "\n")
            for q in recall.questions:
                out.write(json.dumps({"question": asdict(q)}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
