"""The JSON depth limit judged on the raw bytes agrees with the depth of the decoded value,
whatever the strings hold (brackets, quotes, backslashes)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from core.api import json_depth_exceeds, raw_depth_exceeds

TRICKY_TEXT = st.text(alphabet='[]{}"\\\\ab,:', max_size=8)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY_TEXT,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(TRICKY_TEXT, children, max_size=3)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(value=VALUES, limit=st.integers(min_value=1, max_value=8), indent=st.sampled_from([None, 1]))
def test_the_raw_verdict_is_the_decoded_verdict(value, limit, indent):
    raw = json.dumps(value, indent=indent, ensure_ascii=False).encode()
    assert raw_depth_exceeds(raw, limit) == json_depth_exceeds(value, limit)


def test_brackets_inside_strings_are_not_nesting():
    raw = json.dumps({"a": "[[[[[[[[", "b": '"]]]]\\\\'}).encode()
    assert not raw_depth_exceeds(raw, 1)


def test_a_deep_value_under_an_unknown_key_is_seen():
    raw = b'{"known": 1, "unknown": ' + b"[" * 40 + b"]" * 40 + b"}"
    assert raw_depth_exceeds(raw, 32)
