import pytest

from analysis.kvcache import DTYPE_BYTES, format_bytes, kv_cache_bytes, max_batch_for_memory

SEED_13B = {"layers": 40, "kv_heads": 40, "head_dim": 128, "seq_len": 2048, "batch": 16}


def test_the_seed_13b_inputs_give_their_true_product():
    # 2 x 40 x 40 x 128 x 2048 x 16 x 2 = 26,843,545,600 bytes. The seed prints "~21.5 GB" for
    # these inputs, an arithmetic slip (see the next test); the formula, not the slip, is tested.
    assert kv_cache_bytes(**SEED_13B, bytes_per_element=2) == 26_843_545_600


def test_the_seed_figure_of_21_5_gb_is_what_32_kv_heads_give():
    thirty_two_heads = kv_cache_bytes(**{**SEED_13B, "kv_heads": 32})
    assert thirty_two_heads == 21_474_836_480


def test_21_474_836_480_bytes_reads_as_21_5_gigabytes():
    assert format_bytes(21_474_836_480) == "21.5 GB"


def test_21_474_836_480_bytes_is_exactly_20_gibibytes():
    assert format_bytes(21_474_836_480, binary=True) == "20.0 GiB"


def test_the_seed_13b_cache_reads_as_26_8_gigabytes():
    assert format_bytes(kv_cache_bytes(**SEED_13B)) == "26.8 GB"


def test_grouped_query_attention_counts_only_the_kv_heads():
    # Llama-3-8B: 32 layers, 32 query heads but 8 KV heads, head_dim 128, bf16.
    one_sequence = kv_cache_bytes(layers=32, kv_heads=8, head_dim=128, seq_len=8192, batch=1)
    assert one_sequence == 2 * 32 * 8 * 128 * 8192 * 2 == 1_073_741_824  # 1 GiB, not 4 GiB


def test_fp8_halves_the_fp16_cache():
    fp8 = kv_cache_bytes(**SEED_13B, bytes_per_element=DTYPE_BYTES["fp8"])
    assert fp8 * 2 == kv_cache_bytes(**SEED_13B, bytes_per_element=DTYPE_BYTES["fp16"])


def test_max_batch_counts_whole_sequences_that_fit():
    per_sequence = kv_cache_bytes(layers=32, kv_heads=8, head_dim=128, seq_len=8192, batch=1)
    assert max_batch_for_memory(free_bytes=40 * 2**30 + 1, per_sequence_bytes=per_sequence) == 40


def test_max_batch_is_zero_when_not_one_sequence_fits():
    assert max_batch_for_memory(free_bytes=10, per_sequence_bytes=11) == 0


@pytest.mark.parametrize("field", ["layers", "kv_heads", "head_dim", "seq_len", "batch"])
def test_it_names_the_argument_that_is_not_positive(field):
    with pytest.raises(ValueError, match=f"^{field} must be at least 1"):
        kv_cache_bytes(**{**SEED_13B, field: 0})


def test_it_refuses_a_fractional_count():
    with pytest.raises(ValueError, match="head_dim must be a whole number"):
        kv_cache_bytes(**{**SEED_13B, "head_dim": 128.5})


def test_it_refuses_a_bool_for_a_count():
    with pytest.raises(ValueError, match="batch must be a whole number"):
        kv_cache_bytes(**{**SEED_13B, "batch": True})


def test_max_batch_refuses_a_zero_sequence_size():
    with pytest.raises(ValueError, match="per_sequence_bytes must be at least 1"):
        max_batch_for_memory(free_bytes=100, per_sequence_bytes=0)


def test_max_batch_refuses_negative_free_memory():
    with pytest.raises(ValueError, match="free_bytes must be 0 or more"):
        max_batch_for_memory(free_bytes=-1, per_sequence_bytes=10)


def test_small_sizes_are_shown_in_bytes():
    assert format_bytes(512) == "512 B"
