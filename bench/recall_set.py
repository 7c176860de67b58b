"""The recall-quality set: what an agent writes down, and what people later ask it.

A seeded generator (templates and vocabularies in this file, no network, no model)
builds one person's memory as an agent keeps it over about two years, and questions
about it with the record(s) that answer each one:

- dated notes, one per happening, written in the first person by the agent of the
  person it works for ("me") or by two colleagues' agents into the shared workspace:
  meetings, decisions, incidents, releases, customer calls, interviews, flights,
  hotels, dinners, appointments, repairs, runs, books, courses, family news and more,
  with names, places, amounts, times and codes;
- one profile per close contact, grown fact by fact through ``memory_remember``;
- questions phrased as people ask: other word forms than the note uses, words the
  note does not contain, words left out, first names only, dates written another
  way. Each names its evidence by key.

The same seed gives the same set on every machine: :data:`CHECKSUM` is the SHA-256 of
its canonical JSON, checked by ``tests/unit/test_recall_set.py`` and by the
benchmark. ``python -m bench.recall_set --write FILE`` writes it out as JSON lines to
read. The benchmark is ``bench/recall_bench.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

SEED = 20251111
# SHA-256 of the canonical JSON of generate(SEED); a changed generator changes it.
CHECKSUM = "71b0e1893a7fa1eee4f02a4225ee6040924abbe7b8452c7aaeb3ff611401179b"

START = date(2024, 1, 8)
END = date(2025, 10, 24)
# A question more memories than this answer alike is dropped as too vague.
MAX_EVIDENCE = 3
READER = "me"  # the person whose agent asks; colleagues' agents write shared notes
COLLEAGUES = ("jordan", "robin")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST_NAMES = _words(
    "Priya Marco Dana Tomasz Aiko Kwame Lucía Hannah Ibrahim Mei Oskar Fatima Jonas "
    "Chloé Ravi Sofia Mateo Yara Erik Nadia Felix Amara Leo Ingrid Hiro Zainab Pablo "
    "Greta Omar Elena Samir Freya Diego Anya Tariq Nora Kenji Lina Bruno Maya Emeka "
    "Clara Viktor Leila Rafael Ines Joon Astrid"
)
LAST_NAMES = _words(
    "Raman Rossi Whitfield Nowak Tanaka Mensah Ortega Brandt Haddad Chen Lindqvist "
    "Karimi Becker Dubois Iyer Costa Alvarez Nasser Holm Petrova Wagner Okafor Moreau "
    "Berg Sato Bello Ruiz Falk Farouk Popescu Khoury Nilsen Herrera Volkova Aziz Keller "
    "Mori Saleh Ferreira Patel Eze Schmidt Novak Rahimi Gomez Silva Park Andersen"
)
WORK_ROLES = (
    "product lead",
    "site reliability engineer",
    "designer",
    "data engineer",
    "CTO",
    "recruiter",
    "account manager",
    "backend engineer",
    "engineering manager",
    "security lead",
    "finance partner",
    "QA lead",
)
PERSONAL_ROLES = (
    "sister",
    "brother",
    "friend",
    "neighbour",
    "cousin",
    "mentor",
    "landlord",
    "old classmate",
    "climbing partner",
)
CITIES = _words(
    "Lisbon Porto Berlin Munich Kraków Tokyo Osaka Accra Lagos Madrid Valencia Toronto "
    "Montreal Nairobi Stockholm Oslo Copenhagen Vienna Prague Istanbul Cairo Dubai Mumbai "
    "Bangalore Singapore Seoul Sydney Melbourne Austin Denver Chicago Boston Seattle "
    "Vancouver Dublin Edinburgh Amsterdam Rotterdam Milan Naples Athens Marseille"
)
PROJECTS = {
    "Atlas": "data warehouse migration",
    "Kestrel": "mobile app redesign",
    "Juniper": "billing rewrite",
    "Harbor": "Kubernetes platform",
    "Lumen": "search relevance work",
    "Orchid": "onboarding flow",
    "Beacon": "alerting overhaul",
    "Cobalt": "payments API",
    "Meridian": "analytics dashboard",
    "Tundra": "cold storage archive",
    "Quill": "documentation site",
    "Sparrow": "customer chat widget",
    "Granite": "single sign-on",
    "Pylon": "event pipeline",
    "Nimbus": "feature flag service",
    "Vesper": "recommendation engine",
}
SERVICES = (
    "checkout API",
    "login service",
    "search cluster",
    "billing worker",
    "image resizer",
    "notification queue",
    "staging database",
    "CI runners",
    "VPN gateway",
    "CDN",
    "invoice exporter",
    "webhook dispatcher",
)
SYMPTOMS = (
    ("returned 502 errors", "errors"),
    ("timed out", "timeouts"),
    ("ran out of disk", "disk"),
    ("dropped messages", "dropped messages"),
    ("served stale data", "stale data"),
    ("slowed to a crawl", "slowness"),
    ("crashed in a loop", "crash loop"),
)
CAUSES = (
    ("an expired TLS certificate", "renewed the certificate and added an expiry alert"),
    ("a runaway cron job", "killed the job and capped its memory"),
    ("a bad config push", "rolled the config back"),
    ("connection pool exhaustion", "raised the pool size and fixed the leak"),
    ("a full log volume", "rotated the logs and grew the volume"),
    ("a DNS change at the provider", "pinned the old resolver"),
    ("a schema migration that locked a table", "split the migration into batches"),
    ("a memory leak in the new release", "rolled back to the previous build"),
    ("an upstream outage at the cloud provider", "failed over to the second region"),
)
CLIENTS = (
    "Northwind Logistics",
    "Bluefin Health",
    "Corvid Media",
    "Halden Bank",
    "Tessera Retail",
    "Ostrava Steel",
    "Lumos Energy",
    "Ferro Motors",
    "Pinecrest Schools",
    "Marlow Insurance",
    "Quantix Labs",
    "Solace Travel",
)
FEATURES = (
    "SAML login",
    "CSV exports",
    "an audit log",
    "a Spanish translation",
    "custom roles",
    "an offline mode",
    "usage-based pricing",
    "data residency in the EU",
    "a Salesforce integration",
    "two-factor authentication",
    "bulk import",
    "a public status page",
)
METRICS = (
    ("p95 latency", "ms", (80, 900)),
    ("error rate", "%", (1, 9)),
    ("weekly active users", "", (1200, 48000)),
    ("churn", "%", (1, 12)),
    ("conversion rate", "%", (2, 18)),
    ("cloud spend", "EUR", (4000, 60000)),
    ("build time", "minutes", (4, 45)),
    ("NPS", "", (12, 71)),
)
SKILLS = (
    "system design",
    "SQL",
    "communication",
    "testing",
    "Go",
    "Python",
    "incident handling",
    "product sense",
    "mentoring",
    "TypeScript",
)
AIRLINES = (
    ("TAP", "TP"),
    ("Lufthansa", "LH"),
    ("KLM", "KL"),
    ("Iberia", "IB"),
    ("Finnair", "AY"),
    ("SAS", "SK"),
    ("Air Canada", "AC"),
    ("ANA", "NH"),
    ("Emirates", "EK"),
    ("Turkish Airlines", "TK"),
)
HOTELS = (
    "Hotel Miradouro",
    "The Linden House",
    "Casa Azul",
    "Hotel Aurora",
    "Skybridge Inn",
    "The Granary",
    "Hotel Kastanie",
    "Harbour View Suites",
    "Ryokan Hanare",
    "The Foundry Rooms",
    "Hotel Solana",
    "Nordlys Hotel",
)
RESTAURANTS = (
    "Taberna do Largo",
    "Osteria Lupo",
    "Kimchi House",
    "Brasserie Noor",
    "Sakura Ramen",
    "El Faro",
    "Café Lindgren",
    "The Copper Pot",
    "Mama Ada's Kitchen",
    "Trattoria Sole",
    "Meze Bar Kalimera",
    "Green Fig",
    "Smokehouse 41",
    "Dim Sum Palace",
)
DISHES = (
    "octopus rice",
    "grilled sardines",
    "cacio e pepe",
    "bibimbap",
    "lamb tagine",
    "tonkotsu ramen",
    "seafood paella",
    "moussaka",
    "pierogi",
    "jollof rice",
    "ceviche",
    "shakshuka",
    "katsu curry",
    "mushroom risotto",
    "pork dumplings",
    "brisket",
)
GIFTS = (
    "noise-cancelling headphones",
    "a pottery class",
    "a Kindle",
    "hiking boots",
    "a cookbook",
    "a fountain pen",
    "concert tickets",
    "a bonsai tree",
    "a watercolour set",
    "a bike lock",
    "a weighted blanket",
    "a board game",
)
BOOKS = (
    ("The Salt Road", "Mira Castell"),
    ("Winter Ledger", "Tobias Renn"),
    ("A Field Guide to Clouds", "Ana Quiroga"),
    ("The Quiet Engine", "Samuel Adeyemi"),
    ("Maps of Small Islands", "Hedda Voss"),
    ("The Glass Orchard", "Leon Mbeki"),
    ("Nine Bridges", "Yuki Harada"),
    ("The Long Migration", "Colette Arnaud"),
    ("Copper and Ash", "Dmitri Sorokin"),
    ("Tidewater", "Grace Olumide"),
    ("The Lantern Keeper", "Paulo Mendes"),
    ("Second Harvest", "Ruth Abernathy"),
)
MEDICATIONS = (
    "ibuprofen",
    "vitamin D",
    "omeprazole",
    "cetirizine",
    "amoxicillin",
    "magnesium",
    "iron tablets",
    "melatonin",
)
DOCTORS = (
    ("Keller", "dentist"),
    ("Okafor", "GP"),
    ("Lindqvist", "physiotherapist"),
    ("Moreau", "dermatologist"),
    ("Sato", "eye doctor"),
    ("Haddad", "cardiologist"),
)
APPLIANCES = (
    "dishwasher",
    "boiler",
    "washing machine",
    "fridge",
    "oven",
    "heat pump",
    "garage door",
    "bathroom tap",
)
TRADES = ("plumber", "electrician", "handyman", "locksmith", "heating engineer")
COURSES = (
    ("Spanish B1", "Babbel"),
    ("statistics", "Coursera"),
    ("Rust", "Exercism"),
    ("pottery", "the community centre"),
    ("sailing", "the harbour club"),
    ("piano grade 3", "Ms. Albers"),
    ("product management", "Reforge"),
    ("first aid", "the Red Cross"),
)
PETS = (("Biscuit", "dog"), ("Pepper", "cat"), ("Miso", "cat"), ("Otto", "dog"))
ROUTES = (
    "river path",
    "park loop",
    "harbour front",
    "canal towpath",
    "hill trail",
    "old railway line",
)
SUBSCRIPTIONS = (
    "Netflix",
    "Spotify",
    "the gym",
    "Audible",
    "the climbing wall",
    "Duolingo",
    "the newspaper",
    "iCloud storage",
)
GARAGES = ("AutoPlus", "Kwik Fit", "Meyer Garage", "the dealer in town")
CAR_WORK = (
    "new front brake pads",
    "an oil change and new wipers",
    "two new tyres",
    "a timing belt",
    "a battery replacement",
    "an air-con refill",
)
FRAMINGS = (  # extra words people put around a question
    "{q}",
    "{q}",
    "{q}",
    "remind me, {q}",
    "do you remember {q}",
    "{q} again?",
    "quick one: {q}",
    "can you check {q}",
    "I forgot, {q}",
)
MONTHS = _words(
    "January February March April May June July August September October November December"
)


# -- the set ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Memory:
    key: str
    writer: str  # "me" or a colleague: whose agent wrote it
    uri: str
    day: str  # ISO date: when it was last written (the record is backdated to it)
    content: str = ""  # a note written at once (memory_write)
    facts: tuple[str, ...] = ()  # or a profile grown fact by fact (memory_remember)


@dataclass(frozen=True, slots=True)
class Question:
    key: str
    text: str
    evidence: tuple[str, ...]  # keys of the memories that answer it
    topic: str


@dataclass(frozen=True, slots=True)
class RecallSet:
    memories: tuple[Memory, ...]
    questions: tuple[Question, ...]

    def canonical(self) -> bytes:
        data = {
            "memories": [asdict(m) for m in self.memories],
            "questions": [asdict(q) for q in self.questions],
        }
        return json.dumps(data, ensure_ascii=False, sort_keys=True).encode()

    def checksum(self) -> str:
        return hashlib.sha256(self.canonical()).hexdigest()

    def slice(self, questions: int, seed: int = 1) -> RecallSet:
        """A smaller set: ``questions`` questions drawn evenly over the topics, with all
        their evidence and enough other memories (about five per question) to compete."""
        rng = random.Random(seed)
        by_topic: dict[str, list[Question]] = {}
        for q in self.questions:
            by_topic.setdefault(q.topic, []).append(q)
        chosen: list[Question] = []
        while len(chosen) < questions and any(by_topic.values()):
            for topic in sorted(by_topic):
                if by_topic[topic] and len(chosen) < questions:
                    chosen.append(by_topic[topic].pop(rng.randrange(len(by_topic[topic]))))
        needed = {k for q in chosen for k in q.evidence}
        others = [m for m in self.memories if m.key not in needed]
        rng.shuffle(others)
        keep = needed | {m.key for m in others[: 5 * len(chosen)]}
        return RecallSet(
            tuple(m for m in self.memories if m.key in keep),
            tuple(q for q in self.questions if q in chosen),
        )


# -- people and dates ------------------------------------------------------------------


@dataclass(slots=True)
class Person:
    first: str
    last: str
    role: str
    work: bool
    city: str
    pronoun: str  # "she", "he" or "they"
    facts: list[str] = field(default_factory=list)
    questions: list[tuple[str, str]] = field(default_factory=list)  # (question, topic)

    @property
    def full(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def slug(self) -> str:
        return f"{_ascii(self.first)}-{_ascii(self.last)}".lower()


def _ascii(text: str) -> str:
    table = str.maketrans("áéíóúüçãõñčłżśćńąęöåøæ", "aeiouucaoncłzscnaeoaoa")
    return "".join(
        c if c.isalnum() else "-" for c in text.lower().translate(table) if c.isalnum() or c in " -"
    )


def day_styles(d: date, rng: random.Random) -> str:
    """How an agent dates a note: ISO, or written out."""
    return rng.choice(
        [
            d.isoformat(),
            d.isoformat(),
            f"{d.strftime('%a')} {d.day} {d.strftime('%b')} {d.year}",
            f"{d.day} {MONTHS[d.month - 1]} {d.year}",
        ]
    )


def asked_day(d: date, rng: random.Random) -> str:
    """How a person names a day in a question."""
    return rng.choice(
        [
            f"{MONTHS[d.month - 1]} {d.day}",
            f"{d.day} {MONTHS[d.month - 1]}",
            f"the {d.day}{_ordinal(d.day)} of {MONTHS[d.month - 1]}",
            f"{MONTHS[d.month - 1]} {d.day}{_ordinal(d.day)}",
            f"{MONTHS[d.month - 1][:3]} {d.day}",
        ]
    )


def asked_month(d: date, rng: random.Random) -> str:
    return rng.choice([MONTHS[d.month - 1], f"{MONTHS[d.month - 1]} {d.year}"])


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def clock(rng: random.Random) -> str:
    hour = rng.choice([8, 9, 10, 11, 13, 14, 15, 16, 17])
    return f"{hour}:{rng.choice(['00', '15', '30', '45'])}"


def money(rng: random.Random, low: int, high: int, step: int = 10) -> str:
    value = rng.randrange(low, high, step)
    return rng.choice([f"€{value:,}", f"{value:,} EUR", f"${value:,}"])


# -- the generator ---------------------------------------------------------------------


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        firsts = list(FIRST_NAMES)
        lasts = list(LAST_NAMES)
        rng.shuffle(firsts)
        rng.shuffle(lasts)
        self.people: list[Person] = []
        for i, (first, last) in enumerate(zip(firsts, lasts, strict=True)):
            work = i % 3 != 2
            role = rng.choice(WORK_ROLES if work else PERSONAL_ROLES)
            pronoun = rng.choice(["she", "he", "they"])
            self.people.append(Person(first, last, role, work, rng.choice(CITIES), pronoun))
        self.colleagues = [p for p in self.people if p.work]
        self.friends = [p for p in self.people if not p.work]
        self.memories: list[Memory] = []
        self.asked: list[tuple[str, str, str]] = []  # as asked, as offered, topic
        self.offered: dict[str, list[str]] = {}  # question as offered -> memory keys
        self.birthdays: set[str] = set()
        self.medications: set[str] = set()
        self.books: set[str] = set()
        self.courses: set[str] = set()
        self.rents = 0
        self.landlord = self.rng.choice(self.friends)
        self.paths: set[str] = set()
        self.home = rng.choice(CITIES)

    # helpers

    def day(self) -> date:
        span = (END - START).days
        return START + timedelta(days=self.rng.randrange(span))

    def pick(self, items: Sequence[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    def note(
        self,
        slug: str,
        d: date,
        lines: list[str],
        *,
        writer: str = READER,
        folder: str,
        shared: bool = False,
    ) -> str:
        """Add a dated note (the first line is its title); returns its key."""
        rng = self.rng
        key = f"m{len(self.memories) + 1:04d}"
        namespace = "workspace" if shared or writer != READER else "me"
        kind = "notes" if namespace == "workspace" else "memories"
        name = f"{d.isoformat()}-{slug}" if rng.random() < 0.6 else slug
        path = f"{folder}/{name}.md"
        n = 2
        while path in self.paths:  # one record per path
            path = f"{folder}/{name}-{n}.md"
            n += 1
        self.paths.add(path)
        # Markdown heading or not: agents write both.
        head = rng.choice(["# ", "## ", ""])
        first = f"{head}{lines[0]}\n\n" if head else f"{lines[0]}\n"
        body = first + "\n".join(lines[1:])
        self.memories.append(
            Memory(key, writer, f"memory://{namespace}/{kind}/{path}", d.isoformat(), body + "\n")
        )
        return key

    def ask(self, topic: str, text: str) -> None:
        """A question; its evidence is every memory that offered the same question."""
        rng = self.rng
        framed = rng.choice(FRAMINGS).format(q=text)
        if rng.random() < 0.3:
            framed = framed.lower()
        if not framed.endswith("?") and rng.random() < 0.7:
            framed += "?"
        self.asked.append((framed, text, topic))

    def offer(self, share: float, topic: str, key: str, texts: list[str]) -> None:
        """Record the questions memory ``key`` answers, and ask one of them at ``share``.

        A question that several memories offer has all of them as evidence (it cannot
        tell them apart); one offered by more than :data:`MAX_EVIDENCE` is too vague to
        keep."""
        for text in texts:
            if key not in self.offered.setdefault(text, []):
                self.offered[text].append(key)
        if self.rng.random() < share:
            self.ask(topic, self.pick(texts))

    # -- work -----------------------------------------------------------------------

    def meeting(self) -> None:
        rng = self.rng
        p = self.pick(self.colleagues)
        proj = self.pick(list(PROJECTS))
        d = self.day()
        feature, service = self.pick(FEATURES), self.pick(SERVICES)
        said, about, asked = self.pick(
            [
                (
                    f"the {proj} budget is frozen until {MONTHS[(d.month + 1) % 12]}",
                    "budget",
                    f"until when is the {proj} budget frozen",
                ),
                (
                    f"{proj} needs two more engineers before it can ship",
                    "engineers",
                    f"how many engineers does {proj} still need",
                ),
                (
                    f"legal still has not approved the {proj} vendor contract",
                    "contract",
                    f"is the {proj} vendor contract approved yet",
                ),
                (
                    f"the {proj} board demo moves to {clock(rng)} on Thursday",
                    "demo",
                    f"what time is the {proj} demo for the board",
                ),
                (
                    f"customers keep asking for {feature} in {proj}",
                    "customers",
                    f"what are customers asking for in {proj}",
                ),
                (
                    f"{proj} should stop depending on the {service}",
                    "dependency",
                    f"which dependency should {proj} drop",
                ),
            ]
        )
        where = self.pick(["a call", "the office", "a coffee walk", "lunch", "our 1:1"])
        lines = [
            f"Meeting with {p.first} about {proj}",
            f"{day_styles(d, rng)}: talked with {p.full} ({p.role}) over {where}.",
            f"{p.first} said {said}.",
            self.pick(
                [
                    "I agreed to follow up next week.",
                    f"I will send {p.first} the notes tomorrow.",
                    "Nothing else decided.",
                    f"Action for me: update the {proj} plan.",
                ]
            ),
        ]
        key = self.note(f"{proj.lower()}-{p.slug}", d, lines, folder="meetings")
        self.offer(
            0.2,
            "work",
            key,
            [
                f"what did {p.first} say about the {proj} {about}",
                f"what did {p.first} tell me about {proj} in {asked_month(d, rng)}",
                asked,
                f"{proj} {about} {p.first}",
                f"when did {p.first} and I talk about the {proj} {about}",
            ],
        )

    def decision(self) -> None:
        rng = self.rng
        proj, what = self.pick(list(PROJECTS.items()))
        d = self.day()
        choice, reason, short = self.pick(
            [
                (
                    "use PostgreSQL instead of DynamoDB",
                    "the reporting queries need joins",
                    "database",
                ),
                ("ship behind a feature flag first", "a big-bang launch is too risky", "launch"),
                ("postpone the launch by two sprints", "the load tests failed", "launch date"),
                ("drop support for Internet Explorer", "usage is under one percent", "browsers"),
                (
                    "hire a contractor for the frontend",
                    "nobody on the team has capacity",
                    "staffing",
                ),
                ("move the standup to 9:30", "half the team starts late", "standup"),
                ("run the beta with three pilot customers", "support cannot handle more", "beta"),
                ("write the service in Go", "the team knows it best", "language"),
            ]
        )
        approver = self.pick(self.colleagues)
        lines = [
            f"Decision: {proj} will {choice}",
            f"Decided {day_styles(d, rng)} for the {what} ({proj}).",
            f"Reason: {reason}. {approver.full} approved it.",
        ]
        key = self.note(
            f"{proj.lower()}-{short.replace(' ', '-')}", d, lines, folder="decisions", shared=True
        )
        self.offer(
            0.22,
            "work",
            key,
            [
                f"what did we decide about the {proj} {short}",
                f"why is {proj} going to {choice}",
                f"who signed off on the {proj} {short} decision",
                f"what was the reasoning for the {short} choice on the {what}",
                f"why did we decide to {choice} for {proj}",
            ],
        )

    def incident(self) -> None:
        rng = self.rng
        service = self.pick(SERVICES)
        symptom, noun = self.pick(SYMPTOMS)
        cause, fix = self.pick(CAUSES)
        fixer = self.pick(self.colleagues)
        d = self.day()
        minutes = rng.choice([7, 12, 18, 25, 40, 55, 75, 90, 140])
        lines = [
            f"Incident: {service} {symptom}",
            f"{day_styles(d, rng)}, {clock(rng)}: the {service} {symptom} for {minutes} minutes.",
            f"Root cause: {cause}. {fixer.first} {fix}.",
            self.pick(
                [
                    "Postmortem scheduled for Friday.",
                    "No customer data was lost.",
                    f"About {rng.randrange(40, 900)} customers were affected.",
                ]
            ),
        ]
        key = self.note(
            f"incident-{_ascii(service)}",
            d,
            lines,
            writer=self.pick([READER, *COLLEAGUES]),
            folder="incidents",
        )
        self.offer(
            0.25,
            "incident",
            key,
            [
                f"what caused the {service} {noun} in {asked_month(d, rng)}",
                f"why was the {service} down on {asked_day(d, rng)}",
                f"how long did the {service} outage on {asked_day(d, rng)} last",
                f"who fixed the {service} {noun} in {asked_month(d, rng)}",
                f"which outage was caused by {cause} in {asked_month(d, rng)}",
            ],
        )

    def release(self) -> None:
        rng = self.rng
        proj, what = self.pick(list(PROJECTS.items()))
        version = f"{rng.randrange(1, 6)}.{rng.randrange(0, 14)}"
        feature = self.pick(FEATURES)
        d = self.day()
        outcome = rng.choice(["went smoothly", "needed one hotfix", "was paused for an hour"])
        lines = [
            f"{proj} {version} released",
            f"Shipped {proj} {version} on {day_styles(d, rng)}.",
            f"Main change: {feature}. Rollout {outcome}.",
        ]
        key = self.note(
            f"{proj.lower()}-{version}-release",
            d,
            lines,
            writer=self.pick([READER, *COLLEAGUES]),
            folder="releases",
        )
        self.offer(
            0.2,
            "work",
            key,
            [
                f"when did {proj} {version} go out",
                f"what was in the {proj} {version} release",
                f"which {proj} version added {feature}",
                f"when did we ship {feature} for the {what}",
                f"did the {proj} {version} rollout go ok",
            ],
        )

    def customer_call(self) -> None:
        rng = self.rng
        client = self.pick(CLIENTS)
        contact = f"{self.pick(FIRST_NAMES)} {self.pick(LAST_NAMES)}"
        feature = self.pick(FEATURES)
        d = self.day()
        budget = money(rng, 8000, 240000, 1000)
        month = MONTHS[(d.month + rng.randrange(1, 5)) % 12]
        lines = [
            f"Call with {client}",
            f"{day_styles(d, rng)} — spoke with {contact} from {client}.",
            f"They want {feature} before {month}; their budget is {budget} a year.",
            self.pick(
                [
                    "They are also talking to a competitor.",
                    "Renewal is due in the autumn.",
                    "They were happy with support lately.",
                    "They complained about invoice errors.",
                ]
            ),
        ]
        key = self.note(
            f"call-{_ascii(client)}",
            d,
            lines,
            writer=self.pick([READER, READER, *COLLEAGUES]),
            folder="customers",
        )
        short = client.split()[0]
        self.offer(
            0.25,
            "customer",
            key,
            [
                f"what did {short} ask for when I spoke to {contact.split()[0]}",
                f"what budget did {contact} give for {feature}",
                f"by when does {short} need {feature}",
                f"which customer wants {feature} before {month}",
                f"notes from the {client} call in {asked_month(d, rng)}",
            ],
        )

    def interview(self) -> None:
        rng = self.rng
        candidate = f"{self.pick(FIRST_NAMES)} {self.pick(LAST_NAMES)}"
        role = self.pick(WORK_ROLES)
        strong, weak = rng.sample(SKILLS, 2)
        verdict = self.pick(["a hire", "no hire", "a second round", "a hire at a lower level"])
        d = self.day()
        lines = [
            f"Interview: {candidate} ({role})",
            f"Interviewed {candidate} on {day_styles(d, rng)} for the {role} role.",
            f"Strong on {strong}, weaker on {weak}. I recommend {verdict}.",
        ]
        key = self.note(f"interview-{_ascii(candidate)}", d, lines, folder="hiring")
        self.offer(
            0.25,
            "work",
            key,
            [
                f"how did {candidate}'s interview go",
                f"what did I think of {candidate} for the {role} job",
                f"was {candidate} any good at {strong}",
                f"did I recommend hiring {candidate}",
                f"which {role} candidate was weak at {weak}",
            ],
        )

    def metric(self) -> None:
        rng = self.rng
        proj = self.pick(list(PROJECTS))
        name, unit, (low, high) = self.pick(METRICS)
        d = self.day()
        value = rng.randrange(low, high)
        target = rng.randrange(low, high)
        shown = f"{value:,}{unit if unit == '%' else (' ' + unit if unit else '')}"
        aim = f"{target:,}{unit if unit == '%' else ''}"
        month = MONTHS[d.month - 1]
        lines = [
            f"{proj} {name}, {month} {d.year}",
            f"{proj} {name} was {shown} in {month} {d.year} (target {aim}).",
            self.pick(["Trend is improving.", "Worse than last month.", "Flat since spring."]),
        ]
        key = self.note(
            f"{proj.lower()}-{name.replace(' ', '-')}-{d.year}-{d.month:02d}",
            d,
            lines,
            writer=self.pick([READER, *COLLEAGUES]),
            folder="metrics",
        )
        self.offer(
            0.15,
            "work",
            key,
            [
                f"what was the {proj} {name} in {month} {d.year}",
                f"{name} {proj} {month} {d.year}",
                f"did {proj} hit its {name} target in {month} {d.year}",
            ],
        )

    def one_on_one(self) -> None:
        rng = self.rng
        manager = self.pick(self.colleagues)
        d = self.day()
        ask = self.pick(
            [
                "write the on-call handbook",
                "mentor the two new graduates",
                "present the roadmap at the all-hands",
                "take over the vendor negotiations",
                "cut the cloud bill by ten percent",
                "run the hiring loop for the data team",
            ]
        )
        feedback = self.pick(
            [
                "my design docs are too long",
                "I should delegate more",
                "the team trusts my reviews",
                "I need to speak up earlier in planning",
            ]
        )
        lines = [
            f"1:1 with {manager.first}",
            f"{day_styles(d, rng)}. {manager.first} asked me to {ask}.",
            f"Feedback: {feedback}.",
        ]
        key = self.note(f"1on1-{manager.slug}", d, lines, folder="one-on-ones")
        self.offer(
            0.2,
            "work",
            key,
            [
                f"what did {manager.first} ask me to do in our one on one in {asked_month(d, rng)}",
                f"what feedback did {manager.first} give me in {asked_month(d, rng)}",
                f"when did {manager.first} ask me to {ask}",
            ],
        )

    # -- personal -------------------------------------------------------------------

    def flight(self) -> None:
        rng = self.rng
        airline, code = self.pick(AIRLINES)
        city = self.pick([c for c in CITIES if c != self.home])
        d = self.day()
        number = f"{code}{rng.randrange(100, 2999)}"
        seat = f"{rng.randrange(3, 38)}{rng.choice('ACDF')}"
        reference = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
        lines = [
            f"Flight to {city}",
            f"Booked {airline} {number} from {self.home} to {city} on {day_styles(d, rng)}, "
            f"departing {clock(rng)}.",
            f"Seat {seat}, booking reference {reference}.",
            self.pick(["Checked bag included.", "Hand luggage only.", "Paid extra for legroom."]),
        ]
        key = self.note(f"flight-{_ascii(city)}", d, lines, folder="travel")
        self.offer(
            0.3,
            "travel",
            key,
            [
                f"what's my flight number to {city} in {asked_month(d, rng)}",
                f"when am I flying to {city}",
                f"what seat did I get on the {airline} flight to {city}",
                f"booking reference for the {city} flight",
                f"which airline am I taking to {city}",
            ],
        )

    def hotel(self) -> None:
        rng = self.rng
        hotel = self.pick(HOTELS)
        city = self.pick(CITIES)
        d = self.day()
        nights = rng.randrange(1, 8)
        lines = [
            f"Hotel in {city}",
            f"Reserved {hotel} in {city}: {nights} nights from {day_styles(d, rng)}, "
            f"{money(rng, 70, 400, 5)} per night.",
            self.pick(
                [
                    "Breakfast included, free cancellation until two days before.",
                    "Room faces the courtyard; late check-in arranged.",
                    "Near the conference venue, ten minutes on foot.",
                ]
            ),
        ]
        key = self.note(f"hotel-{_ascii(city)}", d, lines, folder="travel")
        self.offer(
            0.25,
            "travel",
            key,
            [
                f"which hotel did I book in {city}",
                f"how much per night is the {city} hotel",
                f"how many nights am I at {hotel} in {city}",
                f"where am I staying in {city} in {asked_month(d, rng)}",
            ],
        )

    def dinner(self) -> None:
        rng = self.rng
        p = self.pick(self.people)
        place = self.pick(RESTAURANTS)
        city = self.pick([self.home, self.home, p.city, self.pick(CITIES)])
        liked, disliked = rng.sample(DISHES, 2)
        d = self.day()
        them = {"she": "her", "he": "him"}.get(p.pronoun, "them")
        lines = [
            f"Dinner at {place}",
            f"{day_styles(d, rng)}: dinner with {p.first} at {place} in {city}.",
            f"The {liked} was excellent; the {disliked} was too salty.",
            self.pick(
                [
                    f"{p.first} paid, I owe {them} one.",
                    "Book ahead next time, it was full.",
                    "Good for groups; ask for the back room.",
                ]
            ),
        ]
        key = self.note(f"dinner-{_ascii(place)}", d, lines, folder="food")
        self.offer(
            0.2,
            "food",
            key,
            [
                f"which dish did I like when I ate at {place} with {p.first}",
                f"where did I have dinner with {p.first} in {city}",
                f"what was too salty when {p.first} and I went to {place}",
                f"restaurant in {city} where the {liked} was great",
                f"what did {p.first} and I eat in {asked_month(d, rng)}",
            ],
        )

    def birthday(self) -> None:
        rng = self.rng
        p = self.pick(self.people)
        if p.slug in self.birthdays:
            return
        self.birthdays.add(p.slug)
        d = self.day()
        gift = self.pick(GIFTS)
        pos = {"she": "her", "he": "his"}.get(p.pronoun, "their")
        lines = [
            f"{p.first}'s birthday",
            f"{p.full}'s birthday is on {d.day} {MONTHS[d.month - 1]}.",
            f"{p.first} mentioned wanting {gift}.",
        ]
        key = self.note(f"birthday-{p.slug}", d, lines, folder="people")
        self.offer(
            0.4,
            "people",
            key,
            [
                f"when is {p.first}'s birthday",
                f"gift ideas for {p.first}",
                f"what should I get {p.first} for {pos} birthday",
                f"whose birthday is on {asked_day(d, rng)}",
            ],
        )

    def appointment(self) -> None:
        rng = self.rng
        doctor, kind = self.pick(DOCTORS)
        d = self.day()
        reason = self.pick(
            [
                "a check-up",
                "the follow-up on my knee",
                "a cleaning",
                "the blood test results",
                "a mole check",
                "new glasses",
                "the back pain",
            ]
        )
        lines = [
            f"Appointment with Dr. {doctor}",
            f"{kind.capitalize()} appointment with Dr. {doctor} on {day_styles(d, rng)} at "
            f"{clock(rng)} for {reason}.",
            self.pick(
                [
                    "Bring the referral letter.",
                    "Clinic moved to the second floor.",
                    "No food two hours before.",
                ]
            ),
        ]
        key = self.note(f"appointment-{doctor.lower()}", d, lines, folder="health")
        self.offer(
            0.25,
            "health",
            key,
            [
                f"when is my appointment with the {kind} for {reason}",
                f"what time do I see Dr. {doctor} in {asked_month(d, rng)}",
                f"why am I seeing Dr. {doctor} on {asked_day(d, rng)}",
                f"doctor's appointment on {asked_day(d, rng)}",
            ],
        )

    def medication(self) -> None:
        rng = self.rng
        med = self.pick(MEDICATIONS)
        if med in self.medications:
            return
        self.medications.add(med)
        doctor, _ = self.pick(DOCTORS)
        dose = rng.choice([5, 10, 20, 40, 200, 400, 1000])
        d = self.day()
        when = rng.choice(["every morning", "twice a day", "at night"])
        lines = [
            f"Started {med}",
            f"{day_styles(d, rng)}: started {med} {dose} mg, {when}, prescribed by Dr. {doctor}.",
            self.pick(["Review in six weeks.", "Stop if dizzy.", "Take with food."]),
        ]
        key = self.note(f"medication-{_ascii(med)}", d, lines, folder="health")
        self.offer(
            0.6,
            "health",
            key,
            [
                f"what dose of {med} should I take",
                f"who prescribed me {med}",
                f"when did I start on {med}",
                f"how often do I take the {med}",
            ],
        )

    def run(self) -> None:
        rng = self.rng
        route = self.pick(ROUTES)
        km = rng.choice([5, 6, 8, 10, 12, 15, 21])
        minutes = int(km * rng.uniform(4.6, 6.4))
        d = self.day()
        lines = [
            f"Run on the {route}",
            f"{day_styles(d, rng)}: ran {km} km along the {route} in {minutes} minutes.",
            self.pick(
                [
                    "Knee felt fine.",
                    "Windy, slow second half.",
                    "New shoes, no blisters.",
                    "Felt strong the whole way.",
                ]
            ),
        ]
        key = self.note(f"run-{route.replace(' ', '-')}", d, lines, folder="fitness")
        self.offer(
            0.12,
            "fitness",
            key,
            [
                f"how long did my {km}k on the {route} take in {asked_month(d, rng)}",
                f"how far did I run on {asked_day(d, rng)}",
                f"what was my time running the {route} on {asked_day(d, rng)}",
            ],
        )

    def book(self) -> None:
        rng = self.rng
        title, author = self.pick(BOOKS)
        if title in self.books:
            return
        self.books.add(title)
        d = self.day()
        opinion = self.pick(
            [
                "the middle drags but the ending is worth it",
                "beautiful writing, thin plot",
                "best thing I read this year",
                "gave up at the halfway point",
            ]
        )
        recommender = self.pick(self.people)
        lines = [
            f"Finished {title}",
            f'Finished "{title}" by {author} on {day_styles(d, rng)}; {recommender.first} '
            "recommended it.",
            f"Verdict: {opinion}.",
        ]
        key = self.note(f"book-{_ascii(title)}", d, lines, folder="reading")
        self.offer(
            0.6,
            "reading",
            key,
            [
                f"who wrote {title}",
                f"what did I think of {title}",
                f"who recommended {title} to me",
                f"the book by {author.split()[-1]}, did I like it",
                f"which book did {recommender.first} recommend",
            ],
        )

    def repair(self) -> None:
        rng = self.rng
        appliance = self.pick(APPLIANCES)
        trade = self.pick(TRADES)
        person = self.pick(FIRST_NAMES)
        problem = self.pick(
            ["leaking", "not heating", "making a grinding noise", "stuck", "tripping the fuse"]
        )
        d = self.day()
        cost = money(rng, 60, 900, 5)
        months = rng.choice([3, 6, 12, 24])
        lines = [
            f"{appliance.capitalize()} repair",
            f"{day_styles(d, rng)}: {person} the {trade} fixed the {appliance} ({problem}).",
            f"Cost {cost}; {months}-month warranty on the part.",
        ]
        key = self.note(f"repair-{appliance.replace(' ', '-')}", d, lines, folder="home")
        self.offer(
            0.22,
            "home",
            key,
            [
                f"how much did the {appliance} repair cost in {asked_month(d, rng)}",
                f"who fixed the {appliance} when it was {problem}",
                f"how long is the warranty on the {appliance} part from {asked_month(d, rng)}",
                f"what was wrong with the {appliance} in {asked_month(d, rng)}",
                f"which {trade} did I use for the {appliance}",
            ],
        )

    def car(self) -> None:
        rng = self.rng
        garage = self.pick(GARAGES)
        work = self.pick(CAR_WORK)
        d = self.day()
        km = rng.randrange(20, 140) * 1000
        lines = [
            "Car service",
            f"{day_styles(d, rng)}: car at {garage} for {work}.",
            f"Paid {money(rng, 90, 1400, 10)}. Next service at {km:,} km.",
        ]
        key = self.note("car-service", d, lines, folder="home")
        self.offer(
            0.25,
            "home",
            key,
            [
                f"how much did {work} cost at {garage}",
                f"when did the car get {work}",
                f"what did {garage} do to the car in {asked_month(d, rng)}",
            ],
        )

    def subscription(self) -> None:
        rng = self.rng
        service = self.pick(SUBSCRIPTIONS)
        d = self.day()
        action = self.pick(["Cancelled", "Paused", "Upgraded", "Renewed"])
        lines = [
            f"{action} {service}",
            f"{action} {service} on {day_styles(d, rng)} ({money(rng, 4, 60, 1)}/month).",
            self.pick(
                [
                    "Confirmation in my inbox.",
                    "Takes effect next billing cycle.",
                    "Annual plan is cheaper.",
                ]
            ),
        ]
        key = self.note(f"subscription-{_ascii(service)}", d, lines, folder="money")
        self.offer(
            0.2,
            "money",
            key,
            [
                f"when did I {action.lower()[:-1] if action.endswith('ed') else action.lower()} "
                f"{service}",
                f"what did I do with {service} in {asked_month(d, rng)}",
                f"how much was {service} a month when I {action.lower()} it",
            ],
        )

    def family(self) -> None:
        rng = self.rng
        p = self.pick(self.friends)
        city = self.pick(CITIES)
        d = self.day()
        partner = self.pick(FIRST_NAMES)
        dog = self.pick(["Rocco", "Nala", "Bean", "Ziggy"])
        pos = {"she": "her", "he": "his"}.get(p.pronoun, "their")
        news, asked = self.pick(
            [
                (
                    f"is moving to {city} in {MONTHS[(d.month + 2) % 12]} for a new job",
                    f"when is {p.first} moving to {city}",
                ),
                (f"got engaged to {partner} in {city}", f"who is {p.first} marrying"),
                (f"opened a bakery in {city}", f"where did {p.first} open the bakery"),
                (
                    f"broke {pos} wrist climbing in {city}",
                    f"how did {p.first} hurt {pos} wrist",
                ),
                ("passed the bar exam", f"did {p.first} pass the bar"),
                (f"adopted a rescue dog called {dog}", f"what is {p.first}'s new dog called"),
            ]
        )
        lines = [
            f"News from {p.first}",
            f"{day_styles(d, rng)}: {p.first} ({p.role}) {news}.",
            self.pick(["Call them this weekend.", "Send a card.", "Visit when I'm nearby."]),
        ]
        key = self.note(f"news-{p.slug}", d, lines, folder="people")
        self.offer(
            0.3,
            "people",
            key,
            [asked, f"what news did {p.first} have in {asked_month(d, rng)}"],
        )

    def course(self) -> None:
        rng = self.rng
        course, where = self.pick(COURSES)
        if course in self.courses:
            return
        self.courses.add(course)
        d = self.day()
        lessons = rng.randrange(4, 16)
        test = d + timedelta(days=rng.randrange(40, 120))
        lines = [
            f"{course.capitalize()} course",
            f"Signed up for {course} with {where} on {day_styles(d, rng)}.",
            f"{lessons} lessons; final test on {test.isoformat()}.",
        ]
        key = self.note(f"course-{_ascii(course)}", d, lines, folder="learning")
        self.offer(
            0.7,
            "learning",
            key,
            [
                f"where am I learning {course}",
                f"when is the {course} exam",
                f"how many lessons does the {course} course have",
            ],
        )

    def pet(self) -> None:
        rng = self.rng
        name, animal = self.pick(PETS)
        d = self.day()
        vet = self.pick(["Dr. Brandt's clinic", "the vet on Elm Street", "PetCare Centre"])
        reason = self.pick(
            ["vaccinations", "a limp", "worming", "a dental clean", "an ear infection"]
        )
        lines = [
            f"{name} at the vet",
            f"{day_styles(d, rng)}: took {name} the {animal} to {vet} for {reason}.",
            f"Weight {rng.randrange(3, 32)} kg. Next visit in {MONTHS[(d.month + 5) % 12]}.",
        ]
        key = self.note(f"vet-{name.lower()}", d, lines, folder="home")
        self.offer(
            0.2,
            "home",
            key,
            [
                f"when is {name}'s next vet visit, after the one for {reason}",
                f"how much did {name} weigh in {asked_month(d, rng)}",
                f"why did {name} go to the vet in {asked_month(d, rng)}",
            ],
        )

    def recipe(self) -> None:
        rng = self.rng
        p = self.pick(self.people)
        dish = self.pick(DISHES)
        d = self.day()
        minutes = rng.choice([20, 25, 35, 45, 60, 90])
        temperature = rng.choice([160, 180, 200, 220])
        secret = self.pick(
            ["smoked paprika", "lots of garlic", "fresh ginger", "preserved lemon", "miso butter"]
        )
        lines = [
            f"{p.first}'s {dish}",
            f"Recipe from {p.first}, {day_styles(d, rng)}: {dish} with {secret}.",
            f"Oven at {temperature} °C for {minutes} minutes; rest ten minutes before serving.",
        ]
        key = self.note(f"recipe-{_ascii(dish)}", d, lines, folder="food")
        self.offer(
            0.25,
            "food",
            key,
            [
                f"how long does {p.first}'s {dish} bake",
                f"what's the secret ingredient in {p.first}'s {dish}",
                f"oven temperature for {p.first}'s {dish}",
            ],
        )

    def rent(self) -> None:
        rng = self.rng
        if self.rents >= 4:
            return
        self.rents += 1
        d = self.day()
        amount = money(rng, 900, 2600, 25)
        landlord = self.landlord
        start = MONTHS[(d.month + 1) % 12]
        lines = [
            "Rent change",
            f"{day_styles(d, rng)}: {landlord.full} said the rent for the {self.home} flat goes "
            f"to {amount} from {start}.",
            self.pick(
                [
                    "Ask about fixing the window first.",
                    "Lease renewal in autumn.",
                    "Deposit stays the same.",
                ]
            ),
        ]
        key = self.note("rent", d, lines, folder="money")
        self.offer(
            0.6,
            "money",
            key,
            [
                f"what did {landlord.first} say about the rent in {asked_month(d, rng)}",
                f"from when is the rent {amount}",
            ],
        )

    # -- profiles -------------------------------------------------------------------

    def profiles(self) -> None:
        rng = self.rng
        for p in rng.sample(self.people, 36):
            pos = "their" if p.pronoun == "they" else ("her" if p.pronoun == "she" else "his")
            coffee = self.pick(
                [
                    "oat flat white",
                    "double espresso",
                    "black filter coffee",
                    "chai latte",
                    "decaf cappuccino",
                ]
            )
            food = self.pick(DISHES)
            team = self.pick(
                ["FC Porto", "Arsenal", "the Blue Jays", "Bayern", "Celtic", "the Kings"]
            )
            kids = rng.sample(FIRST_NAMES, 2)
            allergy = self.pick(["peanuts", "shellfish", "penicillin", "cats", "pollen"])
            language = self.pick(
                ["Portuguese", "Japanese", "Polish", "Arabic", "Swahili", "Korean"]
            )
            hobby = self.pick(["cello", "padel", "chess", "bass guitar", "volleyball"])
            contact = self.pick(
                ["Slack over email", "calls over chat", "mornings for meetings", "written updates"]
            )
            ages = (rng.randrange(2, 9), rng.randrange(9, 16))
            options = [
                (
                    f"Drinks {coffee}",
                    [
                        f"how does {p.first} take {pos} coffee",
                        f"what coffee should I order for {p.first}",
                    ],
                ),
                (
                    f"Allergic to {allergy}",
                    [f"is {p.first} allergic to anything", f"{p.first} allergies"],
                ),
                (
                    f"Kids: {kids[0]} ({ages[0]}) and {kids[1]} ({ages[1]})",
                    [f"what are {p.first}'s kids called", f"how old are {p.first}'s children"],
                ),
                (
                    f"Grew up in {self.pick(CITIES)}",
                    [f"where did {p.first} grow up", f"{p.first} hometown"],
                ),
                (
                    f"Favourite food: {food}",
                    [f"what food does {p.first} love", f"what should I cook for {p.first}"],
                ),
                (
                    f"Supports {team}",
                    [f"which team does {p.first} support", f"is {p.first} a football fan"],
                ),
                (
                    f"Speaks {language} and English",
                    [f"what languages does {p.first} speak"],
                ),
                (f"Lives in {p.city}", [f"where does {p.first} live now"]),
                (f"Vegetarian since {rng.randrange(2012, 2024)}", [f"does {p.first} eat meat"]),
                (
                    f"Plays {hobby} on weekends",
                    [f"what does {p.first} do on weekends"],
                ),
                (
                    f"Works as {p.role}" if p.work else f"My {p.role}",
                    [f"what does {p.first} {p.last} do", f"how do I know {p.first}"],
                ),
                (
                    f"Prefers {contact}",
                    [f"how does {p.first} like to be contacted"],
                ),
            ]
            picked = rng.sample(options, rng.randrange(4, 9))
            d = self.day()
            key = f"m{len(self.memories) + 1:04d}"
            path = f"people/{p.slug}.md"
            self.paths.add(path)
            facts = tuple(text for text, _ in picked)
            self.memories.append(
                Memory(key, READER, f"memory://me/memories/{path}", d.isoformat(), facts=facts)
            )
            for _, asks in picked:
                self.offer(0.25, "profile", key, asks)

    # -- all ------------------------------------------------------------------------

    def build(self) -> RecallSet:
        kinds: list[tuple[Callable[[], None], int]] = [
            (self.meeting, 240),
            (self.decision, 120),
            (self.incident, 160),
            (self.release, 130),
            (self.customer_call, 120),
            (self.interview, 80),
            (self.metric, 120),
            (self.one_on_one, 70),
            (self.flight, 90),
            (self.hotel, 90),
            (self.dinner, 150),
            (self.birthday, 45),
            (self.appointment, 80),
            (self.medication, 50),
            (self.run, 160),
            (self.book, 50),
            (self.repair, 70),
            (self.car, 40),
            (self.subscription, 60),
            (self.family, 80),
            (self.course, 45),
            (self.pet, 45),
            (self.recipe, 60),
            (self.rent, 25),
        ]
        schedule = [make for make, count in kinds for _ in range(count)]
        self.rng.shuffle(schedule)
        for make in schedule:
            make()
        self.profiles()
        kept = [
            (text, tuple(self.offered[offered]), topic)
            for text, offered, topic in self.asked
            if len(self.offered[offered]) <= MAX_EVIDENCE
        ]
        questions = tuple(
            Question(f"q{i + 1:04d}", text, evidence, topic)
            for i, (text, evidence, topic) in enumerate(kept)
        )
        return RecallSet(tuple(self.memories), questions)


def generate(seed: int = SEED) -> RecallSet:
    return Generator(seed).build()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_set", description=__doc__)
    parser.add_argument("--write", type=Path, help="write the set as JSON lines to this file")
    args = parser.parse_args(argv)
    recall = generate()
    print(
        f"{len(recall.memories)} memories, {len(recall.questions)} questions, "
        f"checksum {recall.checksum()} (expected {CHECKSUM})",
        file=sys.stderr,
    )
    if args.write:
        with args.write.open("w", encoding="utf-8") as out:
            for m in recall.memories:
                out.write(json.dumps({"memory": asdict(m)}, ensure_ascii=False) + "\n")
            for q in recall.questions:
                out.write(json.dumps({"question": asdict(q)}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
