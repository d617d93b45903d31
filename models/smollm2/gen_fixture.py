"""Writes the fixtures of models/smollm2's tests with Hugging Face transformers loading the GGUF
file itself (transformers 5.23.0, tokenizers 0.23.3, gguf 0.19.0, accelerate 1.15.0, torch 2.15.0,
pinned in parity/requirements.txt), offline. Run with the torch venv's python:

    HF_HUB_OFFLINE=1 ~/.cache/mhalab/torch-venv/bin/python models/smollm2/gen_fixture.py [--only tokenizer|model]

testdata/tokenizer.json
    ≥ 300 strings (hand-picked and seeded random mixes: English, code, digits, whitespace runs,
    contractions, accents, CJK, emoji, special tokens inside text) with the ids of
    AutoTokenizer.from_pretrained(dir, gguf_file=...) and its decode of those ids; chat
    conversations with apply_chat_template(..., add_generation_prompt=True), text and ids.
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
    ap.add_argument("--only", choices=["tokenizer", "model"])
    ap.add_argument("--out", default=os.path.join(HERE, "testdata"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.only in (None, "tokenizer"):
        tokenizer_fixture(a.out)
    if a.only in (None, "model"):
        model_fixture(a.out)


def model_fixture(out):
    raise SystemExit("model fixture: not yet")


if __name__ == "__main__":
    main()
