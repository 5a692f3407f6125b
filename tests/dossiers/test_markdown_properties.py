"""Property tests: any text given to the dossier parser gives a dossier or DossierFormatError.

Inputs: arbitrary text; a demo file with one line replaced by arbitrary text (the file a person
almost wrote); and a demo file with one value of a ```yaml block replaced by arbitrary YAML.
Parsing needs no database (it only reads the models' field definitions).
"""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dossiers import demo
from dossiers.markdown import DossierFormatError, ParsedDossier, parse_dossier

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILE = demo.demo_files()[0].read_text(encoding="utf-8")
LINES = FILE.splitlines()
VALUE_LINES = [i for i, line in enumerate(LINES) if re.match(r"^[a-z_]+: \S", line)]


def parses_or_refuses(text: str) -> None:
    try:
        assert isinstance(parse_dossier(text), ParsedDossier)
    except DossierFormatError as exc:
        assert str(exc) and "\n" not in str(exc)


@PROPERTY
@given(st.text(max_size=400))
def test_any_text_parses_or_is_refused(text):
    parses_or_refuses(text)


@PROPERTY
@given(st.text(max_size=400))
def test_any_text_after_a_valid_header_parses_or_is_refused(text):
    parses_or_refuses("---\nformat: perfhub-dossier\nversion: 2\nservice: x\n---\n" + text)


@PROPERTY
@given(st.integers(0, len(LINES) - 1), st.text(max_size=80))
def test_a_demo_file_with_one_line_replaced_parses_or_is_refused(index, text):
    lines = [*LINES]
    lines[index] = text
    parses_or_refuses("\n".join(lines))


yaml_values = st.sampled_from(
    ["", "null", "~", "-1", "1e400", ".nan", "[1, [2]]", "{a: 1}", "'x'", "yes", "2026-02-30",
     "2026-01-01T25:00:00Z", "&a 1", "*a", "!!binary aGk=", "!!python/none ''", "[" * 200]
) | st.text(max_size=30)  # fmt: skip


@PROPERTY
@given(st.sampled_from(VALUE_LINES), yaml_values)
def test_a_demo_file_with_one_value_replaced_parses_or_is_refused(index, value):
    lines = [*LINES]
    key = lines[index].split(":", 1)[0]
    lines[index] = f"{key}: {value}"
    parses_or_refuses("\n".join(lines))
