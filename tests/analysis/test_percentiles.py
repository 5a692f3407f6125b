from analysis.percentiles import Percentile, label, minimum_count


def test_labels_read_like_the_dashboards():
    assert [label(q) for q in (0.5, 0.9, 0.95, 0.99, 0.999)] == [
        "p50",
        "p90",
        "p95",
        "p99",
        "p999",
    ]


def test_a_p99_needs_a_hundred_requests():
    assert minimum_count(0.99) == 100


def test_a_p99_on_fifty_requests_is_marked_insufficient():
    assert not Percentile(q=0.99, value=1.0, count=50).sufficient


def test_an_insufficient_p999_says_how_many_requests_it_needs():
    p = Percentile(q=0.999, value=None, count=300)
    assert p.shortfall == "needs at least 1,000 requests; 300 counted"
    assert Percentile(q=0.999, value=1.0, count=1000).shortfall == ""
