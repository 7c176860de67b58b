"""UTF-8 cuts: prefixes and read windows end on character boundaries, and are maximal."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from memory_server.domain.errors import ToolError
from memory_server.domain.utf8 import utf8_prefix, utf8_window

# Text that UTF-8 can encode, weighted towards multi-byte characters (2, 3 and 4 bytes).
encodable = st.text(
    st.one_of(
        st.characters(max_codepoint=0x7F),
        st.characters(min_codepoint=0x80, max_codepoint=0x7FF),
        st.characters(min_codepoint=0x800, max_codepoint=0xFFFF, exclude_categories=["Cs"]),
        st.characters(min_codepoint=0x10000),
    )
)


def boundaries(text: str) -> list[int]:
    """Every byte offset at which a character starts, and the end."""
    offsets, at = [], 0
    for char in text:
        offsets.append(at)
        at += len(char.encode())
    return [*offsets, at]


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("abc", 3, ("abc", False)),
        ("abc", 2, ("ab", True)),
        ("é", 1, ("", True)),
        ("aé", 2, ("a", True)),
        ("日本", 5, ("日", True)),
        ("🙂🙂", 7, ("🙂", True)),
        ("🙂🙂", 8, ("🙂🙂", False)),
        ("", 0, ("", False)),
        ("x", 0, ("", True)),
    ],
)
def test_utf8_prefix_examples(text: str, limit: int, expected: tuple[str, bool]) -> None:
    assert utf8_prefix(text, limit) == expected


@given(encodable, st.integers(min_value=0, max_value=80))
def test_utf8_prefix_is_the_longest_whole_character_prefix(text: str, limit: int) -> None:
    cut, truncated = utf8_prefix(text, limit)
    fitting = [b for b in boundaries(text) if b <= limit]
    assert len(cut.encode()) == max(fitting)
    assert text.encode().startswith(cut.encode())
    assert truncated is (len(text.encode()) > limit)


@given(encodable, st.integers(min_value=1, max_value=40))
def test_windows_tile_the_text_on_character_boundaries(text: str, size: int) -> None:
    assume(size >= max((len(c.encode()) for c in text), default=1))
    encoded, offset, seen = text.encode(), 0, []
    starts = set(boundaries(text))
    while True:
        chunk, following = utf8_window(text, offset, size)
        seen.append(chunk)
        end = offset + len(chunk.encode())
        assert encoded[offset:end] == chunk.encode()
        assert len(chunk.encode()) <= size
        if following is None:
            assert end == len(encoded)
            break
        # Continues exactly where the chunk ended, at a character start, and the chunk
        # was as long as it could be: the next character would not have fitted.
        assert following == end and following in starts and following < len(encoded)
        assert chunk
        next_char = encoded[end:].decode()[0]
        assert len(chunk.encode()) + len(next_char.encode()) > size
        offset = following
    assert "".join(seen) == text


@given(encodable.filter(lambda t: any(len(c.encode()) > 1 for c in t)))
def test_a_window_may_not_start_inside_a_character(text: str) -> None:
    inside = sorted(set(range(len(text.encode()))) - set(boundaries(text)))
    for offset in inside[:5]:
        with pytest.raises(ToolError) as caught:
            utf8_window(text, offset, 64)
        assert caught.value.code == "invalid_argument"
        assert "character boundary" in caught.value.message


def test_window_at_the_end_is_empty_and_final() -> None:
    assert utf8_window("héllo", 6, 10) == ("", None)
    assert utf8_window("", 0, 1) == ("", None)


def test_window_beyond_the_end_names_the_size() -> None:
    with pytest.raises(ToolError) as caught:
        utf8_window("héllo", 7, 10)
    assert caught.value.code == "invalid_argument"
    assert caught.value.message == "offset 7 is beyond the end of the content (6 bytes)"


def test_window_smaller_than_the_next_character_is_refused() -> None:
    assert utf8_window("a🙂", 0, 3) == ("a", 1)
    with pytest.raises(ToolError) as caught:
        utf8_window("a🙂", 1, 3)
    assert caught.value.message == "max_bytes is smaller than the next character"
    assert utf8_window("a🙂", 1, 4) == ("🙂", None)


def test_window_examples() -> None:
    text = "aé日🙂z"  # 1 + 2 + 3 + 4 + 1 bytes
    assert utf8_window(text, 0, 2) == ("a", 1)
    assert utf8_window(text, 0, 3) == ("aé", 3)
    assert utf8_window(text, 3, 6) == ("日", 6)
    assert utf8_window(text, 3, 7) == ("日🙂", 10)
    assert utf8_window(text, 6, 100) == ("🙂z", None)
