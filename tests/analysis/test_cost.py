import pytest

from analysis import cost


def test_it_reproduces_the_seed_cost_per_million_tokens():
    value = cost.cost_per_million_tokens(gpu_hour_price=10, gpus=1, tokens_per_second=2000)
    assert round(value, 2) == 1.39


def test_it_reproduces_the_seed_margin():
    c = cost.cost_per_million_tokens(gpu_hour_price=10, gpus=1, tokens_per_second=2000)
    assert round(cost.margin(price_per_mtok=5, cost_per_mtok=c) * 100) == 72


def test_cost_scales_with_gpu_count():
    one = cost.cost_per_million_tokens(gpu_hour_price=10, gpus=1, tokens_per_second=2000)
    two = cost.cost_per_million_tokens(gpu_hour_price=10, gpus=2, tokens_per_second=2000)
    assert two == pytest.approx(2 * one)


def test_usage_basis_counts_only_busy_hours():
    e = cost.economics(gpu_hour_price=10, gpus=1, tokens_per_second=2000, busy_fraction=0.3)
    assert e.cost_per_mtok_usage == pytest.approx(e.cost_per_mtok * 0.3)


def test_it_refuses_zero_throughput():
    with pytest.raises(ValueError, match="tokens_per_second"):
        cost.cost_per_million_tokens(gpu_hour_price=10, gpus=1, tokens_per_second=0)
