#!/usr/bin/env python3
"""Tiny Hugging Face Llama models for the real vLLM and SGLang tests, made offline.

No model hub is reachable from the test machines, so this trains a small
byte-level BPE tokenizer with `tokenizers` on text that ships with Python
itself (its licence and a few stdlib sources: nothing is downloaded) and
saves random Llama models with `transformers`:

  target       2 layers, random: an ordinary model for serving checks.
  loop-target  2 layers whose attention and MLP outputs are zeroed (o_proj
               and down_proj are 0), so the residual stream stays the token's
               embedding and the next token depends only on the current one:
               greedy or sharp sampling loops, and a draft can be perfect.
  draft        1 zeroed layer sharing loop-target's embeddings, final norm
               and head: it predicts exactly what loop-target will say.
  bad-draft    draft with the head's rows rotated by one token: it always
               proposes the token after the right one, so nothing is accepted.

The head is scaled so the top logit leads the next by tens of units: sampling
at temperature 1 is as deterministic as greedy. Run with the vLLM venv's
python (it has torch, transformers and tokenizers); scripts/real-peer.sh does.
"""

import argparse
import os
import sys
import sysconfig

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 1024
SPECIAL = ["<s>", "</s>", "<pad>"]
# A plain template so /v1/chat/completions works (vLLM and SGLang need one).
CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant\n{% endif %}"
)
STDLIB_TEXT = ["this.py", "textwrap.py", "argparse.py", "json/__init__.py", "difflib.py"]


def corpus():
    """Text that every CPython install carries: its licence and some modules."""
    lib = sysconfig.get_path("stdlib")
    files = [os.path.join(lib, "LICENSE.txt")]
    files += [os.path.join(lib, f) for f in STDLIB_TEXT]
    texts = [open(f, encoding="utf-8").read() for f in files if os.path.exists(f)]
    if len(texts) < 3:
        sys.exit(f"make-tiny-hf: error: too little local text under {lib}")
    return texts


def tokenizer(out):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def config(tok, layers):
    return LlamaConfig(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )


def zero_blocks(model):
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()


def save(model, tok, out, name):
    path = os.path.join(out, name)
    model.save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    print(f"make-tiny-hf: wrote {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    out = ap.parse_args().out_dir
    os.makedirs(out, exist_ok=True)
    tok = tokenizer(os.path.join(out, "tokenizer"))
    torch.manual_seed(13)
    save(LlamaForCausalLM(config(tok, 2)), tok, out, "target")

    loop = LlamaForCausalLM(config(tok, 2))
    zero_blocks(loop)
    with torch.no_grad():
        # Sharp head: with hidden 128 and weights of std 4, the logits have a
        # std of about 45 and the top one leads by ten units or more.
        loop.lm_head.weight.normal_(0.0, 4.0)
    save(loop, tok, out, "loop-target")

    draft = LlamaForCausalLM(config(tok, 1))
    zero_blocks(draft)
    with torch.no_grad():
        draft.model.embed_tokens.weight.copy_(loop.model.embed_tokens.weight)
        draft.model.norm.weight.copy_(loop.model.norm.weight)
        draft.lm_head.weight.copy_(loop.lm_head.weight)
    save(draft, tok, out, "draft")

    with torch.no_grad():
        # Row i of the head scores what loop-target scored for token i-1:
        # the draft's argmax is always loop-target's plus one.
        draft.lm_head.weight.copy_(torch.roll(loop.lm_head.weight, 1, dims=0))
    save(draft, tok, out, "bad-draft")
    check(loop, out)


def check(loop, out):
    """The next-token map of loop-target must ignore the context."""
    ids = torch.tensor([[5, 9, 40, 300]])
    with torch.no_grad():
        a = loop(ids).logits[0, -1].argmax().item()
        b = loop(torch.tensor([[300]])).logits[0, -1].argmax().item()
    if a != b:
        sys.exit(f"make-tiny-hf: error: {out}/loop-target depends on context ({a} != {b})")


if __name__ == "__main__":
    main()
