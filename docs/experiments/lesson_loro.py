#!/usr/bin/env python3
"""Leave-one-repository-out check of a learned lesson classifier.

Reads what `engram-ingestor extractor sentences` lists for a data home that
scanned ../shared/realdata/claude (laid out as the realdata benchmark does),
labels each user sentence from ../shared/realdata/labels.json, and for each
repository fits a logistic regression on the other fifteen and scores it.
Prints, per threshold, (sentences selected, of them lesson sentences, lessons
covered) for the rules alone, the model alone and the two combined.

    python3 docs/experiments/lesson_loro.py sentences.jsonl [nongram]

A sentence is a lesson sentence when it states a correction, convention or
preference of its session's labels: it matches the lesson's term sets, or
60% of its character 4-grams are in the lesson's quote. Features: the cues
extraction lists, whether the rules kept it, and (unless `nongram`) hashed
words, word pairs and CJK character pairs. Standard library only.
"""
import collections, json, math, random, re, sys, zlib

SHARED = "../shared/realdata/labels.json"
STATED = {"correction", "convention", "preference"}
DIM = 1 << 18


def norm(t):
    t = re.sub(r"\(assistant[^)]*\)?", "", t.lower())
    return re.sub(r"[\s`*_\"'>]+", " ", t).strip()


def grams(t, n=4):
    return {t[i:i + n] for i in range(max(0, len(t) - n + 1))}


def matches(text, sets):
    t = text.lower()
    return any(s and all(x.lower() in t for x in s) for s in sets)


def label(rows, labels):
    by_session = {"claude:" + s["claude"].split("/")[-1][:-6]: s for s in labels}
    out = []
    for r in rows:
        s = by_session.get(r["session"])
        if not s:
            continue
        t = norm(r["text"])
        g = grams(t)
        ids = []
        for l in s["lessons"]:
            if l["kind"] not in STATED:
                continue
            q = set()
            for frag in norm(l["quote"]).split("..."):
                q |= grams(frag.strip())
            if matches(r["text"], l["match"]) or (len(t) >= 12 and g and len(g & q) / len(g) >= 0.6):
                ids.append(l["id"])
        r.update(repo=s["repo"], ids=ids, y=1 if ids else 0)
        out.append(r)
    return out


def h(s):
    return zlib.crc32(s.encode()) % DIM


def features(r, ngram):
    f = collections.Counter(h("c:" + c) for c in r["cues"])
    if r["kept"]:
        f[h("c:kept")] += 1
    if ngram:
        t = r["text"].lower()
        words = re.findall(r"\w+", t)
        f.update(h("w:" + w) for w in words)
        f.update(h("b:" + a + " " + b) for a, b in zip(words, words[1:]))
        f.update(h("2:" + t[i:i + 2]) for i in range(len(t) - 1) if "\u3040" <= t[i] <= "\u9fff")
    n = math.sqrt(sum(v * v for v in f.values()))
    f = {k: v / n for k, v in f.items()}
    f[h("bias")] = 1.0
    return f


def fit(rows, ngram, epochs=10, lr=0.05, l2=1e-3, pos_weight=3.0):
    w = collections.defaultdict(float)
    xs = [(features(r, ngram), r["y"]) for r in rows]
    rnd = random.Random(1)
    for _ in range(epochs):
        rnd.shuffle(xs)
        for f, y in xs:
            z = sum(w[k] * v for k, v in f.items())
            g = (1 / (1 + math.exp(-max(-30, min(30, z)))) - y) * (pos_weight if y else 1.0)
            for k, v in f.items():
                w[k] -= lr * (g * v + l2 * w[k])
    return w


def main():
    rows = [json.loads(l) for l in open(sys.argv[1])]
    ngram = "nongram" not in sys.argv
    data = label(rows, json.load(open(SHARED)))
    for repo in sorted({r["repo"] for r in data}):
        w = fit([r for r in data if r["repo"] != repo], ngram)
        for r in data:
            if r["repo"] == repo:
                z = sum(w.get(k, 0) * v for k, v in features(r, ngram).items())
                r["p"] = 1 / (1 + math.exp(-max(-30, min(30, z))))

    def tally(pick):
        sel = [r for r in data if pick(r)]
        return len(sel), sum(r["y"] for r in sel), len({i for r in sel for i in r["ids"]})

    print("sentences", len(data), "lesson sentences", sum(r["y"] for r in data),
          "lessons they state", len({i for r in data for i in r["ids"]}))
    print("rules alone (selected, lesson sentences, lessons):", tally(lambda r: r["kept"]))
    for t in (0.3, 0.4, 0.5, 0.6, 0.7):
        print(f"p >= {t}: model {tally(lambda r: r['p'] >= t)}, rules or model {tally(lambda r: r['kept'] or r['p'] >= t)}")


if __name__ == "__main__":
    main()
