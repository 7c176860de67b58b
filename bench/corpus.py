"""Synthetic but realistic record text: Markdown notes in everyday English.

Words are drawn from ``bench.vocabulary`` with Zipf frequencies (rank r has weight
1/r), so a few function words dominate, as they do in real prose, and the text-search
configuration sees a natural spread of document frequencies. Sentences are drawn from
a pre-generated pool: drawing each word separately for a million records would make
Python, not PostgreSQL, the bottleneck of seeding, and the word statistics are the same.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from .vocabulary import load_words

# Terms the seed plants deliberately (none of them occurs in the vocabulary).
RARE_TERM = "zeppelin"  # a handful of records in the largest workspace
COMMON_TERM = "deployment"  # about 10% of every workspace
# An ordinary vocabulary word of middling rank: what a typical query looks like.
TYPICAL_TERM = "migration"

BODY_MIN_BYTES = 200
BODY_MAX_BYTES = 2000
_SENTENCE_POOL = 50_000
_TITLE_SKIP = 120  # titles draw from content words, past the leading function words
_LONGEST_SENTENCE = 160  # bytes; sentences are capped so a body never overshoots
# Room for what is added after the sentence budget is met: one overshooting sentence,
# the bullet-list heading and markers.
_SLACK = _LONGEST_SENTENCE + 40


@dataclass(frozen=True, slots=True)
class Document:
    title: str
    body: str


class TextGenerator:
    """Titles and Markdown bodies of 200 to 2000 bytes, reproducible from ``rng``."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._words = load_words()
        banned = {RARE_TERM, COMMON_TERM}
        assert not banned & set(self._words), "planted terms must not be in the vocabulary"
        assert TYPICAL_TERM in self._words
        self._cum_weights = list(
            itertools.accumulate(1.0 / r for r in range(1, len(self._words) + 1))
        )
        self._title_words = self._words[_TITLE_SKIP:]
        self._sentences = [self._sentence() for _ in range(_SENTENCE_POOL)]

    def _sentence(self) -> str:
        rng = self._rng
        while True:
            count = rng.randint(5, 18)
            words = rng.choices(self._words, cum_weights=self._cum_weights, k=count)
            if count > 9 and rng.random() < 0.4:
                words[rng.randint(3, count - 3)] += ","
            text = " ".join(words)
            if len(text) < _LONGEST_SENTENCE:
                return text[0].upper() + text[1:] + "."

    def title(self) -> str:
        words = self._rng.sample(self._title_words, self._rng.randint(3, 7))
        text = " ".join(words)
        return text[0].upper() + text[1:]

    def body_bytes(self) -> int:
        return self._rng.randint(BODY_MIN_BYTES, BODY_MAX_BYTES - _SLACK)

    def document(self, *, plant: tuple[str, ...] = (), skill: str | None = None) -> Document:
        """One record; ``plant`` terms are woven into the body, ``skill`` makes a SKILL.md."""
        rng = self._rng
        title = skill or self.title()
        head = f"# {title}\n\n"
        if skill is not None:
            description = rng.choice(self._sentences)
            head = f"---\nname: {skill}\ndescription: {description}\n---\n\n" + head
        budget = self.body_bytes() - len(head) - sum(len(t) + 1 for t in plant)
        sentences: list[str] = []
        size = 0
        while size < budget or not sentences:
            sentence = rng.choice(self._sentences)
            sentences.append(sentence)
            size += len(sentence) + 1
        for term in plant:
            index = rng.randrange(len(sentences))
            words = sentences[index].split(" ")
            words.insert(rng.randint(1, len(words) - 1) if len(words) > 1 else 1, term)
            sentences[index] = " ".join(words)
        body = head + self._markdown(sentences)
        return Document(title, body)

    def _markdown(self, sentences: list[str]) -> str:
        """Paragraphs of two to five sentences; some notes end in a bullet list."""
        rng = self._rng
        bullets: list[str] = []
        if len(sentences) > 4 and rng.random() < 0.3:
            cut = len(sentences) - rng.randint(2, 4)
            sentences, bullets = sentences[:cut], sentences[cut:]
        paragraphs: list[str] = []
        start = 0
        while start < len(sentences):
            end = start + rng.randint(2, 5)
            paragraphs.append(" ".join(sentences[start:end]))
            start = end
        text = "\n\n".join(paragraphs)
        if bullets:
            text += "\n\n## Follow-up\n\n" + "\n".join(f"- {b}" for b in bullets)
        return text + "\n"

    def slug(self) -> str:
        return "-".join(self._rng.sample(self._title_words, 2)).lower()
