#!/usr/bin/env python3
"""Writes a tiny llama-architecture target/draft GGUF pair for fast
speculative-decoding runs of llama.cpp's llama-server.

Why structured weights rather than random ones: random weights give a flat
next-token distribution, so a draft and target would almost never agree and
acceptance would be ~0. Here each model is a real llama transformer (attention
and FFN blocks with small random weights) whose residual stream is dominated
by the token embedding, and whose output matrix maps "current token i" to a
strongly peaked "next token succ(i)". The target's succ walks one cycle
through the printable ASCII byte tokens, so generated text is valid ASCII and
never hits EOS. The draft is a smaller model (fewer layers, narrower) with the
same vocabulary and the same succ except on a chosen fraction of tokens
(--disagree), so acceptance is high but not total and depends on how far the
draft runs ahead: just what a --spec-draft-n-max sweep should show.

Vocabulary: byte-level SentencePiece style (tokenizer model "llama"): <unk>,
<s>, </s>, then <0x00>..<0xFF> byte tokens; every text tokenizes by byte
fallback. Deterministic for a given --seed.
"""

import argparse
import os
import sys

import numpy as np

try:
    import gguf
except ImportError:  # the message says what to do next
    sys.exit("make-tiny-gguf: error: python package 'gguf' missing; run scripts/deps.sh")

N_SPECIAL = 3  # <unk>, <s>, </s>
N_VOCAB = N_SPECIAL + 256
PRINTABLE = [N_SPECIAL + b for b in range(0x20, 0x7F)]  # byte tokens ' '..'~'
# chatml, so /v1/chat/completions works without a template from the user.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def vocab():
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [
        gguf.TokenType.UNKNOWN,
        gguf.TokenType.CONTROL,
        gguf.TokenType.CONTROL,
    ] + [gguf.TokenType.BYTE] * 256
    scores = [0.0] * len(tokens)
    return tokens, scores, types


def successors(rng):
    """succ for every token: a single cycle through PRINTABLE; tokens outside
    it (specials, other bytes) jump into the cycle."""
    order = list(rng.permutation(PRINTABLE))
    succ = np.zeros(N_VOCAB, dtype=np.int64)
    for a, b in zip(order, order[1:] + order[:1]):
        succ[a] = b
    others = [t for t in range(N_VOCAB) if t not in set(PRINTABLE)]
    succ[others] = rng.choice(PRINTABLE, size=len(others))
    return succ


def draft_successors(succ, disagree, rng):
    out = succ.copy()
    n = int(round(disagree * len(PRINTABLE)))
    for t in rng.choice(PRINTABLE, size=n, replace=False):
        choices = [p for p in PRINTABLE if p != succ[t]]
        out[t] = rng.choice(choices)
    return out


def write_model(path, name, succ, n_embd, n_layer, n_head, n_ff, n_ctx, rng, sharpness):
    head_dim = n_embd // n_head
    # Rows of norm sqrt(n_embd): rms_norm leaves them (nearly) unchanged.
    emb = rng.standard_normal((N_VOCAB, n_embd)).astype(np.float32)
    emb *= np.sqrt(n_embd) / np.linalg.norm(emb, axis=1, keepdims=True)
    # logits_j = <h, out_j>; out_j = sum of emb[i] over i with succ(i) = j,
    # scaled so the right token wins by ~sharpness nats.
    out = np.zeros((N_VOCAB, n_embd), dtype=np.float32)
    for i in range(N_VOCAB):
        out[succ[i]] += emb[i]
    out *= sharpness / n_embd

    tmp = path + ".tmp"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name(name)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    tokens, scores, types = vocab()
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def small(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    w.add_tensor("token_embd.weight", emb)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("output.weight", out)
    for layer in range(n_layer):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", small(n_embd, n_embd))
        w.add_tensor(p + "attn_k.weight", small(n_embd, n_embd))
        w.add_tensor(p + "attn_v.weight", small(n_embd, n_embd))
        w.add_tensor(p + "attn_output.weight", small(n_embd, n_embd))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", small(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", small(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", small(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True, help="where tiny-target.gguf and tiny-draft.gguf go")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--disagree", type=float, default=0.2,
                    help="fraction of printable tokens whose successor the draft gets wrong")
    ap.add_argument("--sharpness", type=float, default=24.0,
                    help="logit margin of the predicted token (higher = more deterministic)")
    a = ap.parse_args()
    if not 0.0 <= a.disagree <= 1.0:
        sys.exit("make-tiny-gguf: error: --disagree: must be within 0..1")
    os.makedirs(a.out_dir, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    succ = successors(rng)
    dsucc = draft_successors(succ, a.disagree, rng)
    target = os.path.join(a.out_dir, "tiny-target.gguf")
    draft = os.path.join(a.out_dir, "tiny-draft.gguf")
    write_model(target, "sweepkit-tiny-target", succ, n_embd=128, n_layer=4, n_head=4,
                n_ff=384, n_ctx=4096, rng=rng, sharpness=a.sharpness)
    write_model(draft, "sweepkit-tiny-draft", dsucc, n_embd=64, n_layer=1, n_head=2,
                n_ff=128, n_ctx=4096, rng=rng, sharpness=a.sharpness)
    print(target)
    print(draft)


if __name__ == "__main__":
    main()
