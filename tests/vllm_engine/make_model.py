"""A tiny random-weight Llama and a tokenizer trained here, for `make e2e-vllm`.

Run with the vLLM venv's Python: `python make_model.py DIR`. Nothing is downloaded: the
tokenizer is a byte-level BPE trained with `tokenizers` on text generated from a fixed seed,
the weights are drawn from a fixed seed, and both are written as a Hugging Face model folder
(config.json, model.safetensors, tokenizer files) that `vllm serve DIR` loads offline.

The model is sized for throughput on two shared CPU cores, not for meaning: 2 layers, hidden
size 128, head size 64 (a size vLLM's CPU attention supports), a 2,048-token vocabulary.
Its answers are noise; the benchmark ignores end-of-sequence, so every answer has its asked length.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 2048
SPECIAL = ["<unk>", "<s>", "</s>"]
SEED = 20


def corpus(lines: int = 4000) -> list[str]:
    """Pseudo-words from a fixed seed: enough distinct byte pairs for a 2,048-entry BPE."""
    rng = random.Random(SEED)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [26 - i for i in range(len(letters))]  # a rough English letter frequency
    words = ["".join(rng.choices(letters, weights, k=rng.randint(1, 9))) for _ in range(3000)]
    return [" ".join(rng.choices(words, k=rng.randint(5, 30))) + "." for _ in range(lines)]


def tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=1024,
    )


def model(tok: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
    )
    return LlamaForCausalLM(config).to(torch.bfloat16)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer()
    tok.save_pretrained(out)
    model(tok).save_pretrained(out, safe_serialization=True)
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"model in {out}: vocabulary {len(tok)}, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
