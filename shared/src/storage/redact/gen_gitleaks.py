#!/usr/bin/env python3
"""Generates gitleaks.rs (the secret rules redaction uses) from gitleaks'
default configuration.

    python3 shared/src/storage/redact/gen_gitleaks.py path/to/gitleaks/config/gitleaks.toml COMMIT \
        > shared/src/storage/redact/gitleaks.rs

The rules are gitleaks' data, used under its MIT license (reproduced in the
generated file). Rules that only match file paths are left out: redaction
sees text, not files. Paths in allowlists are left out for the same reason.
Patterns are RE2 (Go); the one construct Rust's regex reads otherwise, a `{`
that starts no repetition, is escaped.
"""

import re
import sys
import tomllib

LICENSE = """MIT License

Copyright (c) 2019 Zachary Rice

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE."""


QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")


def rust_pattern(p):
    """Go's RE2 reads a `{` that starts no repetition (`{{`, `{\\d+}`) as a
    literal; Rust's regex refuses it. Escapes those, outside classes."""
    out, i, in_class = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            out.append(p[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]" or (out and out[-1] == "[")
        elif c == "[":
            in_class = True
        elif c == "{" and not QUANTIFIER.match(p, i):
            out.append("\\{")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def raw(s):
    hashes = 1
    while '"' + "#" * hashes in s:
        hashes += 1
    h = "#" * hashes
    return f'r{h}"{s}"{h}'


def strs(items):
    return "&[" + ", ".join(raw(i) for i in items) + "]"


def allow(a):
    target = {"": "Secret", "secret": "Secret", "match": "Match", "line": "Line"}[a.get("regexTarget", "")]
    condition_and = a.get("condition", "OR").upper() == "AND"
    return (
        f"Allow {{ target: Target::{target}, all: {str(condition_and).lower()}, "
        f"regexes: {strs([rust_pattern(r) for r in a.get('regexes', [])])}, stopwords: {strs([w.lower() for w in a.get('stopwords', [])])} }}"
    )


def main():
    path, commit = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        config = tomllib.load(f)
    out = []
    out.append("//! Secret rules generated from gitleaks' default configuration")
    out.append(f"//! (`config/gitleaks.toml` of github.com/gitleaks/gitleaks at {commit}) by")
    out.append("//! `gen_gitleaks.py`; do not edit by hand. Rules that only match file paths")
    out.append("//! are left out. The rules are gitleaks' data, used under its license:")
    out.append("//!")
    for line in LICENSE.splitlines():
        out.append(("//! " + line).rstrip())
    out.append("")
    out.append("use super::rules::{Allow, Rule, Target};")
    out.append("")
    g = config.get("allowlist", {})
    out.append("/// gitleaks' global allowlist (its regexes and stopwords; not its paths).")
    out.append(f"pub(super) const GLOBAL_ALLOW: Allow = {allow({'regexes': g.get('regexes', []), 'stopwords': g.get('stopwords', [])})};")
    out.append("")
    out.append("/// Every rule with a regex, in gitleaks' order.")
    out.append("pub(super) const RULES: &[Rule] = &[")
    skipped = 0
    for r in config["rules"]:
        if "regex" not in r:
            skipped += 1
            continue
        allows = []
        for a in r.get("allowlists", []):
            if a.get("regexes") or a.get("stopwords"):
                allows.append(allow(a))
        out.append(
            f"    Rule {{ id: {raw(r['id'])}, regex: {raw(rust_pattern(r['regex']))}, secret_group: {r.get('secretGroup', 0)}, "
            f"entropy: {float(r.get('entropy', 0.0))!r}, keywords: {strs([k.lower() for k in r.get('keywords', [])])}, "
            f"allow: &[{', '.join(allows)}] }},"
        )
    out.append("];")
    print("\n".join(out))
    print(f"{len(config['rules']) - skipped} rules written, {skipped} path-only rules left out", file=sys.stderr)


if __name__ == "__main__":
    main()
