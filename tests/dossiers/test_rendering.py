"""Markdown rendering is sanitized; diffs pair lines readably."""

from dossiers.rendering import classify_unified, render_markdown, side_by_side


def test_it_renders_tables():
    html = render_markdown("| metric | P99 |\n|---|--:|\n| TTFT | 480 |\n")
    assert "<table>" in html
    assert "<td" in html and "480</td>" in html


def test_it_renders_fenced_code_with_its_language():
    html = render_markdown('```json\n{"max_num_seqs": 16}\n```\n')
    assert '<pre><code class="language-json">' in html


def test_it_drops_script_elements_and_their_content():
    html = render_markdown("Hello\n\n<script>alert('x')</script>\n")
    assert "<script" not in html
    assert "alert" not in html


def test_it_drops_event_handler_attributes():
    html = render_markdown('<img src="a.png" onerror="alert(1)"> <b onmouseover="x()">b</b>')
    assert "onerror" not in html
    assert "onmouseover" not in html
    assert "alert(1)" not in html


def test_it_drops_javascript_urls_in_markdown_links():
    html = render_markdown("[click](javascript:alert(1))")
    assert "javascript:" not in html
    assert ">click</a>" in html


def test_it_drops_javascript_urls_in_raw_html_links():
    html = render_markdown('<a href="JaVaScRiPt:alert(1)">x</a>')
    assert "alert" not in html.lower()


def test_it_drops_iframes_and_styles():
    html = render_markdown('<iframe src="https://evil"></iframe><style>body{}</style>ok')
    assert "<iframe" not in html
    assert "<style" not in html


def test_it_keeps_ordinary_links_and_marks_them_nofollow():
    html = render_markdown("[docs](https://docs.vllm.ai/)")
    assert 'href="https://docs.vllm.ai/"' in html
    assert 'rel="noopener noreferrer nofollow"' in html


def test_empty_text_renders_empty():
    assert render_markdown("") == ""


def test_side_by_side_pairs_changed_lines_and_numbers_both_sides():
    rows = side_by_side("a\nb\nc\n", "a\nB\nc\nd\n")
    assert [(r.kind, r.left_no, r.left, r.right_no, r.right) for r in rows] == [
        ("equal", 1, "a", 1, "a"),
        ("replace", 2, "b", 2, "B"),
        ("equal", 3, "c", 3, "c"),
        ("insert", None, "", 4, "d"),
    ]


def test_side_by_side_shows_deletions_on_the_left_only():
    rows = side_by_side("a\nb\n", "a\n")
    assert rows[-1].kind == "delete"
    assert (rows[-1].left, rows[-1].right_no) == ("b", None)


def test_unified_lines_are_classified_for_colouring():
    kinds = [
        line.kind
        for line in classify_unified(["--- v1", "+++ v2", "@@ -1 +1 @@", "-a", "+b", " c"])
    ]
    assert kinds == ["header", "header", "hunk", "remove", "add", "context"]
