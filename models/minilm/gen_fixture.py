#!/usr/bin/env python3
"""Reference generator for models/minilm: Hugging Face tokenizers and transformers on
all-MiniLM-L6-v2 (the setup step's files), written as the committed fixture in testdata/.

  python3 models/minilm/gen_fixture.py --model DIR --out models/minilm/testdata

(`make minilm-fixtures` runs it with the pinned venv: transformers 5.23.0, tokenizers 0.23.3,
torch 2.15, parity/requirements.txt.) It writes

  tokenizer_ids.json      ≥ 300 strings (accents, CJK, emoji, punctuation, long words, empty,
                          whitespace only, ...) with the ids and tokens of `tokenizers`
                          (padding and truncation off, [CLS] … [SEP] added)
  reference.safetensors   for a few sentences, each run alone (no padding):
                            s<i>.ids        I32 [L]
                            s<i>.hidden     F32 [7, L, 384]   embeddings output, then every layer
                            s<i>.attn       F32 [6, 12, L, L] attention weights of every layer/head
                            s<i>.err32.hidden F64 [7], s<i>.err32.attn F64 [6]: max |float32 − float64|
                                            of transformers itself, per layer (the tolerance's scale)
                          and for more sentences (sentence-transformers' pipeline: truncation to 256
                          tokens, mean pooling over the attention mask, L2 normalisation):
                            emb.<j>         F32 [384]
                          The values are transformers run in float64 (model.double()), rounded to
                          float32; metadata: the sentences (JSON) and the versions.

Attention uses attn_implementation="eager" (SDPA returns no weights). Runs offline
(HF_HUB_OFFLINE=1): everything comes from --model.
"""

import argparse
import json
import os
import random
import sys
import unicodedata

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import safetensors.numpy  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

# Sentences whose hidden states and attention weights go into the fixture (one per length class).
DETAIL_SENTENCES = [
    "A man is eating food.",
    "The cat sat on the mat because it was tired.",
    "Héllo, wörld! Naïve café-goers don't tokenize 12,345 émojis 🙂 in Zürich's 東京 office.",
]

# Sentences whose sentence embeddings go into the fixture.
EMBED_SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "The cat sat on the mat because it was tired.",
    "Un homme mange de la nourriture.",
    # Longer than 256 tokens: sentence-transformers truncates it to 256.
    " ".join(["The quick brown fox jumps over the lazy dog near the riverbank."] * 30),
]

MAX_SEQ_LENGTH = 256  # sentence_bert_config.json


def tokenizer_strings():
    """The ≥ 300 strings of the tokenizer fixture: hand-picked cases, then deterministic mixes."""
    s = [
        "", " ", "   ", "\t", "\n", "\r\n", " \t\n ", "\u00a0", "\u3000", "\u200b", "\u2028",
        "hello", "Hello, world!", "HELLO WORLD", "hello   world", "  leading and trailing  ",
        "The cat sat on the mat because it was tired.", "A man is eating food.",
        "don't", "won't can't shouldn't", "U.S.A.", "e.g., i.e.,", "Mr. Smith's dog.",
        "state-of-the-art", "well--known", "a/b\\c|d", "x@y.com", "https://example.com/a?b=c&d=e#f",
        "#hashtag @mention", "$100.00 or €50 or £30 or ¥1000", "50% off!!!", "3.14159", "1,234,567",
        "2026-11-30T23:59:59Z", "(parentheses) [brackets] {braces} <angles>", "«guillemets» „quotes“",
        "“smart quotes” and ‘single’", "ellipsis… and em—dash – en-dash", "***", "!!!???...", "¿Qué? ¡Sí!",
        "café", "naïve", "résumé", "Zürich", "São Paulo", "Ærøskøbing", "Łódź", "Dvořák", "façade",
        "crème brûlée", "jalapeño", "Ångström", "İstanbul", "ß straße STRASSE", "ﬁ ligature ﬂ",
        "e\u0301", "a\u0308o\u0308u\u0308", "\u0301", "n\u0303", "Å vs A\u030a",
        "Straße", "Ελληνικά γράμματα", "Привет, мир!", "Здравствуйте", "שלום עולם", "مرحبا بالعالم",
        "नमस्ते दुनिया", "বাংলা", "ภาษาไทยไม่มีช่องว่าง", "ລາວ", "ქართული", "Հայերեն", "አማርኛ",
        "中文字符", "我爱自然语言处理。", "東京は日本の首都です", "ひらがなとカタカナ", "カタカナ", "한국어 문장입니다",
        "한글", "漢字とかな混じり文", "中文English混合", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ", "①②③", "Ⅻ", "㎏ ㎞",
        "🙂", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "I ❤ NY", "★☆✓✗", "→ ← ↑ ↓", "∑∫√∞≠≤≥", "°C ±5",
        "x² + y³ = z₄", "½ ¼ ¾", "™ © ®", "§ ¶ †", "\x00", "a\x00b", "\x07bell", "\x7f", "tab\there",
        "\ufeffBOM", "\ufffd", "soft\u00adhyphen", "zero\u200dwidth\u200cjoiner", "\u202eRTL override",
        "a" * 99, "a" * 100, "a" * 101, "b" * 150, "supercalifragilisticexpialidocious",
        "pneumonoultramicroscopicsilicovolcanoconiosis", "Donaudampfschifffahrtsgesellschaftskapitän",
        "antidisestablishmentarianism", "floccinaucinihilipilification", "xyzzyplughfoobarbazqux",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "1234567890123456789012345678901234567890",
        "tokenization", "tokenizer's", "unaffable", "unbelievably", "reconsidering", "GPUs", "iPhone",
        "McDonald's", "O'Neill", "co-operate", "re-enter", "e-mail", "COVID-19", "x86_64", "snake_case",
        "camelCaseWord", "PascalCase", "kebab-case-word", "SCREAMING_SNAKE", "__init__", "a.b.c.d",
        "...", "--", "''", '""', "``", "~~~", "^^^", "___", "===", "+++", "::", ";;", ",,", "&&", "||",
        "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[cls] lower", "##ing", "##", "#", "[", "]",
        "1", "12", "123", "1234", "12345", "0.5", "-1", "+1", "1e10", "0x1F", "1/2", "3:45pm",
        "I", "a", "A", ".", ",", "!", "?", "'", '"', "-", "(", ")", ":", ";",
    ]
    # Sentences in several languages and registers.
    s += [
        "Natural language processing is a subfield of linguistics and computer science.",
        "Attention is all you need.", "BERT uses WordPiece tokenization with a 30,522-token vocabulary.",
        "Le renard brun rapide saute par-dessus le chien paresseux.",
        "Der schnelle braune Fuchs springt über den faulen Hund.",
        "El rápido zorro marrón salta sobre el perro perezoso.",
        "A rápida raposa marrom pula sobre o cão preguiçoso.",
        "Il veloce volpe marrone salta sopra il cane pigro.",
        "Szybki brązowy lis przeskakuje nad leniwym psem.",
        "Hızlı kahverengi tilki tembel köpeğin üzerinden atlar.",
        "Быстрая коричневая лиса прыгает через ленивую собаку.",
        "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
        "Tiếng Việt có nhiều dấu thanh điệu.", "Þetta er íslenska.", "Čeština má háčky a čárky.",
        "Română: șarpe, țară.", "Magyar: árvíztűrő tükörfúrógép.", "Suomi: Äänestys päättyy pian.",
        "The price is $4.99 (tax incl.) — a 20% discount!", "She said: \"Don't go!\" and left.",
        "Line one.\nLine two.\tTabbed.", "Multiple     spaces    between     words.",
        "Emoji in text 😀 should be [UNK] or split?", "Mixed 中文 and English and 日本語 text.",
        "email me at someone@example.org or call +1 (555) 123-4567.",
        "C++ and C# are programming languages; so is Go.", "The year 1999 was before 2000.",
        "i.e. e.g. etc. vs. cf.", "Q&A: what's the answer?", "Rock 'n' roll", "50/50 chance",
    ]
    # Deterministic mixes: words from a fixed pool joined with random separators and case.
    pool = ["attention", "head", "query", "key", "value", "café", "naïve", "東京", "中文", "🙂", "👍",
            "don't", "state-of-the-art", "12,345", "x²", "Zürich", "Привет", "ß", "é", "¿", "!", "...",
            "tokenization", "supercalifragilistic", "[SEP]", "multi-head", "über", "ñ", "한국", "ñandú",
            "\u00a0", "—", "“quoted”", "a" * 30, "unbelievable", "GPU", "x86", "pre-LN", "1.5e-3", "Ω"]
    seps = [" ", "  ", "\t", "\n", "", "-", ", ", " / "]
    rng = random.Random(20261130)
    while len(s) < 340:
        n = rng.randint(1, 8)
        words = [rng.choice(pool) for _ in range(n)]
        words = [w.upper() if rng.random() < 0.2 else (w.title() if rng.random() < 0.2 else w) for w in words]
        out = words[0]
        for w in words[1:]:
            out += rng.choice(seps) + w
        s.append(out)
    # No duplicates, order kept.
    seen, out = set(), []
    for x in s:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="the all-MiniLM-L6-v2 folder (scripts/setup.sh --only minilm)")
    ap.add_argument("--out", required=True, help="output folder (models/minilm/testdata)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(2)

    # 1. Tokenizer ids: the tokenizers library on tokenizer.json, padding and truncation off.
    tok = tokenizers.Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    cases = []
    for text in tokenizer_strings():
        enc = tok.encode(text)
        cases.append({"text": text, "ids": enc.ids, "tokens": enc.tokens})
    doc = {
        "about": "models/minilm/gen_fixture.py: Hugging Face tokenizers on all-MiniLM-L6-v2's tokenizer.json, "
                 "padding and truncation off, special tokens added",
        "tokenizers_version": tokenizers.__version__,
        "cases": cases,
    }
    with open(os.path.join(args.out, "tokenizer_ids.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print(f"tokenizer_ids.json: {len(cases)} strings", file=sys.stderr)

    # 2. The model, eager attention, in float32 and float64.
    hf_tok = transformers.AutoTokenizer.from_pretrained(args.model)
    m32 = transformers.AutoModel.from_pretrained(args.model, attn_implementation="eager").eval()
    m64 = transformers.AutoModel.from_pretrained(args.model, attn_implementation="eager").eval().double()

    out = {}
    for i, text in enumerate(DETAIL_SENTENCES):
        b = hf_tok(text, return_tensors="pt")
        with torch.no_grad():
            o32 = m32(**b, output_attentions=True, output_hidden_states=True)
            o64 = m64(**b, output_attentions=True, output_hidden_states=True)
        h32 = torch.stack([h[0] for h in o32.hidden_states]).double()  # [7, L, 384]
        h64 = torch.stack([h[0] for h in o64.hidden_states])            # [7, L, 384]
        a32 = torch.stack([a[0] for a in o32.attentions]).double()      # [6, 12, L, L]
        a64 = torch.stack([a[0] for a in o64.attentions])               # [6, 12, L, L]
        out[f"s{i}.ids"] = b["input_ids"][0].numpy().astype(np.int32)
        out[f"s{i}.hidden"] = h64.float().numpy()
        out[f"s{i}.attn"] = a64.float().numpy()
        out[f"s{i}.err32.hidden"] = (h32 - h64).abs().flatten(1).max(1).values.numpy()
        out[f"s{i}.err32.attn"] = (a32 - a64).abs().flatten(1).max(1).values.numpy()
        print(f"s{i}: L={b['input_ids'].shape[1]} err32 hidden {out[f's{i}.err32.hidden'].max():.2e} "
              f"attn {out[f's{i}.err32.attn'].max():.2e}", file=sys.stderr)

    # 3. Sentence embeddings as sentence-transformers computes them, one batch, padded.
    b = hf_tok(EMBED_SENTENCES, padding=True, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="pt")
    with torch.no_grad():
        last = m64(**b).last_hidden_state  # [N, L, 384]
    mask = b["attention_mask"].unsqueeze(-1).double()
    emb = (last * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    emb = torch.nn.functional.normalize(emb, dim=-1)
    for j in range(len(EMBED_SENTENCES)):
        out[f"emb.{j}"] = emb[j].float().numpy()
    print(f"cos(0,1) = {float(emb[0] @ emb[1]):.4f}, cos(0,2) = {float(emb[0] @ emb[2]):.4f}", file=sys.stderr)

    meta = {
        "detail_sentences": json.dumps(DETAIL_SENTENCES, ensure_ascii=False),
        "embed_sentences": json.dumps(EMBED_SENTENCES, ensure_ascii=False),
        "embed_lengths": json.dumps(b["attention_mask"].sum(1).tolist()),
        "max_seq_length": str(MAX_SEQ_LENGTH),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "tokenizers_version": tokenizers.__version__,
        "generator": "models/minilm/gen_fixture.py",
    }
    path = os.path.join(args.out, "reference.safetensors")
    safetensors.numpy.save_file(out, path, metadata=meta)
    os.chmod(path, 0o644)
    print(f"reference.safetensors: {len(out)} tensors", file=sys.stderr)


if __name__ == "__main__":
    main()
