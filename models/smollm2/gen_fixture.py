"""Writes the fixtures of models/smollm2's tests with Hugging Face transformers loading the GGUF
file itself (transformers 5.23.0, tokenizers 0.23.3, gguf 0.19.0, accelerate 1.15.0, torch 2.15.0,
pinned in parity/requirements.txt), offline. Run with the torch venv's python:

    HF_HUB_OFFLINE=1 ~/.cache/mhalab/torch-venv/bin/python models/smollm2/gen_fixture.py [--only tokenizer|model]

testdata/tokenizer.json
    ≥ 300 strings (hand-picked and seeded random mixes: English, code, digits, whitespace runs,
    contractions, accents, CJK, emoji, special tokens inside text) with the ids of
    AutoTokenizer.from_pretrained(dir, gguf_file=...) and its decode of those ids; chat
    conversations with apply_chat_template(..., add_generation_prompt=True), text and ids.
testdata/attention.json
    attention weights of one sentence with attn_implementation="eager" in float32 and the same
    weights in float64: every head of layers ATTN_LAYERS in full, and for every layer and head the
    mean weight on the first token and the weight of "it" on "cat" (what notebook 12 shows).
testdata/model.json
    AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32) (weights dequantised
    to float32 by gguf): logits of whole prompts (top-5 ids and a slice of values at every
    position), greedy continuations of 32+ tokens, and rows of layer 0's q_proj/k_proj (Hugging
    Face's layout) for the attn_q/attn_k un-permutation check.
"""
import argparse
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.environ.get("MHALAB_MODELS") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mhalab", "models")
DIR = os.path.join(MODELS, "smollm2-135m-instruct")
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

HAND = [
    "", " ", "  ", "\n", "\n\n", "\t", " \t\n ", "a", " a", "a ", "a  b", "a   b", "a\n\nb", "a \n b",
    "Once upon a time, there was a little", "What is the capital of France?",
    "The quick brown fox jumps over the lazy dog.", "Hello, world!", "hello  world\n\n",
    "I'm here, you're there, he's gone, we've won, they'll see, I'd go, don't.",
    "I'M HERE, YOU'RE THERE, HE'S GONE", "'s 't 're 've 'm 'll 'd", "''", "'", "rock'n'roll",
    "abc 12345 x", "3.14159", "1,000,000", "2026-11-30T23:59:59Z", "v0.26.0", "x1y2z3", "٣٤٥ ١٢", "Ⅻ ½ ²",
    "Ünïcödé", "naïve café résumé", "Straße", "ÅÄÖ åäö", "Ελληνικά", "Русский текст", "עברית", "العربية",
    "日本語のテキスト", "中文文本，标点。", "한국어 텍스트", "हिन्दी", "ไทย", "🙂", "👍🏽", "👨‍👩‍👧‍👦 family", "🇫🇷 flag",
    "Ünïcödé 日本語 🙂", "e\u0301", "\u00a0nbsp\u00a0", "zero\u200bwidth", "line\u2028sep", "\u3000ideographic",
    "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}",
    "import numpy as np\nprint(np.arange(10))", "SELECT * FROM t WHERE id = 42;", "<div class=\"a\">b</div>",
    "https://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Users\\me\\file.txt", "$HOME/.cache",
    "a+b=c", "!!!", "???!!!...", "--flag=value", "(parenthesised)", "[brackets] {braces}", "#hashtag @mention",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>\n",
    "text<|im_end|>more", "<|im_start|><|im_start|>", " <|im_end|> ", "<|im_start", "im_end|>", "<repo_name>x",
    "<jupyter_code>print(1)<jupyter_output>1", "<|IM_START|>", "<| im_start |>",
    "The capital of France is Paris.", "girl named Emma who loved to play in the sun.",
    "    indented", "trailing   ", "\r\n windows\r\n", "tab\tseparated\tvalues", "mixed \t \n whitespace",
    "CamelCaseIdentifier", "snake_case_identifier", "kebab-case-identifier", "ALLCAPS", "MiXeD cAsE",
    "supercalifragilisticexpialidocious", "antidisestablishmentarianism", "pneumonoultramicroscopic",
    "Ġ", "Ċ", "ĠĠ", "\u0120the", "\u00ff\u00fe", "\x00", "\x01\x02", "\x7f", "~`^",
    # bytes missing from SmolLM2's vocabulary (dropped before merging)
    "\x04", "a\x04b", "!\x04!", "..\x1d..", " \x04 ", "x\x06\x13\x14\x16\x1dy", "é\x04\x04é",
]

PIECES = ["the", " the", "The", " cat", " sat", " on", " mat", ".", ",", "!", "?", " ", "  ", "\n", "\t", "'s", "'ll",
          "n't", " don't", "123", " 4567", "0", "3.5", "é", " café", "日本", "語", "🙂", "👍", " <|im_end|>", "<|im_start|>",
          "(", ")", "{", "}", "[", "]", ";", ":", "\"", "'", "-", "_", "=", "+", "*", "/", "\\", "#", "$", "%", "&",
          " hello", "World", " Python", " def", " return", " x", "  y", "ü", "ß", "Ω", "ж", "ع", "한", "\u00a0", "\r\n"]


def strings():
    rng = random.Random(20261130)
    out = list(HAND)
    while len(out) < 330:
        n = rng.randint(1, 12)
        out.append("".join(rng.choice(PIECES) for _ in range(n)))
    return out


CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Once upon a time, there was a little"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke."}],
    [{"role": "system", "content": "You are a pirate."}, {"role": "user", "content": "Where is the treasure?"}],
    [{"role": "user", "content": "Ünïcödé 日本語 🙂\n\n  spaces  and <|im_end|> inside"}],
    [{"role": "user", "content": ""}],
]


def tokenizer_fixture(out):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(DIR, gguf_file=FILE)
    items = []
    for s in strings():
        ids = tok(s, add_special_tokens=True)["input_ids"]
        assert ids == tok.encode(s, add_special_tokens=False), s
        items.append({"text": s, "ids": ids, "decoded": tok.decode(ids)})
    chats = []
    for msgs in CHATS:
        text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        ids = tok.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True)
        if not isinstance(ids, list):  # a BatchEncoding in some versions
            ids = ids["input_ids"]
        assert ids == tok.encode(text, add_special_tokens=False), msgs
        chats.append({"messages": msgs, "text": text, "ids": ids})
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump({"generator": "transformers AutoTokenizer.from_pretrained(gguf_file=...)",
                   "strings": items, "chats": chats}, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print(f"tokenizer.json: {len(items)} strings, {len(chats)} chats")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["tokenizer", "model", "attention"])
    ap.add_argument("--out", default=os.path.join(HERE, "testdata"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.only in (None, "tokenizer"):
        tokenizer_fixture(a.out)
    if a.only in (None, "model"):
        model_fixture(a.out)
    if a.only in (None, "attention"):
        attention_fixture(a.out)


PROMPTS = [
    "Once upon a time, there was a little",
    "The capital of France is",
    "def fibonacci(n):",
    "The three primary colors are",
    "In 1969, astronauts",
    "Water boils at",
    "My favourite recipe for pancakes starts with",
    "The quick brown fox",
    "Machine learning is",
    "Dear Sir or Madam,",
    "Photosynthesis is the process by which",
    "Ünïcödé 日本語 🙂 and numbers 12345:",
]
CHAT_PROMPTS = ["What is the capital of France?", "Write a haiku about the sea."]
NEW_TOKENS = 40
N_RANDOM_IDS = 48


def f32bits(t):
    import numpy as np
    return np.ascontiguousarray(t.detach().to("cpu").float().numpy()).view(np.uint32).ravel().tolist()


def model_fixture(out):
    import time

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    torch.set_num_threads(2)
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(DIR, gguf_file=FILE)
    m32 = AutoModelForCausalLM.from_pretrained(DIR, gguf_file=FILE, dtype=torch.float32).eval()
    print(f"loaded in {time.time() - t0:.1f} s")
    m64 = AutoModelForCausalLM.from_pretrained(DIR, gguf_file=FILE, dtype=torch.float32).eval().double()
    sd = m32.state_dict()
    layer0 = {
        "q_proj": {"rows": [0, 1, 2, 31, 32, 63, 64, 575], "name": "model.layers.0.self_attn.q_proj.weight"},
        "k_proj": {"rows": [0, 1, 32, 63, 64, 191], "name": "model.layers.0.self_attn.k_proj.weight"},
    }
    for v in layer0.values():
        v["bits"] = f32bits(sd[v["name"]][v["rows"]])
    rng = random.Random(7)
    random_ids = sorted(rng.sample(range(m32.config.vocab_size), N_RANDOM_IDS))

    cases = []
    prompts = [(p, False) for p in PROMPTS] + [(p, True) for p in CHAT_PROMPTS]
    for text, chat in prompts:
        if chat:
            msgs = [{"role": "user", "content": text}]
            ids = tok.encode(tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True), add_special_tokens=False)
        else:
            ids = tok.encode(text, add_special_tokens=False)
        x = torch.tensor([ids])
        with torch.no_grad():
            o32 = m32(x)
            o64 = m64(x)
        l32, l64 = o32.logits[0], o64.logits[0]  # [L, V]
        err32 = (l32.double() - l64).abs()
        positions = []
        for p in range(len(ids)):
            top = torch.topk(l64[p], 10).indices.tolist()
            sel = sorted(set(top) | set(random_ids))
            positions.append({
                "top10_64": top,
                "argmax32": int(l32[p].argmax()),
                "ids": sel,
                "logits64": l64[p, sel].tolist(),
                "logits32_bits": f32bits(l32[p, sel]),
                "max_abs": float(l64[p].abs().max()),
                "err32": float(err32[p].max()),
            })
        # Greedy continuation, pure argmax for NEW_TOKENS steps (no stop), with HF's cache;
        # margin = top-1 − top-2 logit at each step (float32).
        gen, margins, eos_at = [], [], None
        with torch.no_grad():
            r = m32(x, use_cache=True)
            past, logits = r.past_key_values, r.logits[0, -1]
            for step in range(NEW_TOKENS):
                v, i = torch.topk(logits, 2)
                nxt = int(i[0])
                gen.append(nxt)
                margins.append(float(v[0] - v[1]))
                if nxt == tok.eos_token_id and eos_at is None:
                    eos_at = step
                r = m32(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
                past, logits = r.past_key_values, r.logits[0, -1]
        stop = gen[:eos_at] if eos_at is not None else gen
        cases.append({
            "prompt": text, "chat": chat, "prompt_ids": ids, "positions": positions,
            "greedy": gen, "margins": margins, "eos_at": eos_at, "text": tok.decode(stop),
        })
        print(f"{text[:40]!r}: {len(ids)} ids, err32 {max(p['err32'] for p in positions):.2e}, "
              f"min margin {min(margins):.3f}, eos at {eos_at}, {tok.decode(stop)[:60]!r}")
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump({"generator": "transformers AutoModelForCausalLM.from_pretrained(gguf_file=..., dtype=float32); ref64 = the same weights in float64",
                   "new_tokens": NEW_TOKENS, "eos": tok.eos_token_id, "layer0": layer0, "cases": cases}, f)
        f.write("\n")


ATTN_SENTENCE = "The cat sat on the mat because it was tired."
ATTN_LAYERS = [0, 13, 16, 29]


def attention_fixture(out):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(DIR, gguf_file=FILE)
    ids = tok.encode(ATTN_SENTENCE, add_special_tokens=False)
    toks = tok.convert_ids_to_tokens(ids)
    it, cat = toks.index("\u0120it"), toks.index("\u0120cat")
    res = {}
    for name, dtype in (("ref32", torch.float32), ("ref64", torch.float64)):
        m = AutoModelForCausalLM.from_pretrained(DIR, gguf_file=FILE, dtype=torch.float32,
                                                 attn_implementation="eager").eval().to(dtype)
        with torch.no_grad():
            att = torch.stack(m(torch.tensor([ids]), output_attentions=True).attentions)[:, 0]  # [layers, H, L, L]
        res[name] = att.double()
        del m
    a32, a64 = res["ref32"], res["ref64"]
    first = a64[:, :, 1:, 0].mean(-1)  # [layers, H]
    json.dump({"generator": "transformers eager attention, float32 (ref32) and float64 (ref64) of the same weights",
               "sentence": ATTN_SENTENCE, "ids": ids, "tokens": toks, "it": it, "cat": cat,
               "layers": ATTN_LAYERS,
               "weights64": a64[ATTN_LAYERS].tolist(),
               "err32": float((a32 - a64).abs().max()),
               "first_share64": first.tolist(),
               "it_cat64": a64[:, :, it, cat].tolist()},
              open(os.path.join(out, "attention.json"), "w"))
    print(f"attention: {len(ids)} tokens, HF float32 error on the weights {float((a32 - a64).abs().max()):.2e}")


if __name__ == "__main__":
    main()
