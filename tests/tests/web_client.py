"""Drives a running `engram-scorer web` from outside, as its users do.

    web_client.py rest    BASE_URL DATA_HOME
    web_client.py guarded BASE_URL DATA_HOME
    web_client.py browser BASE_URL DATA_HOME [SHOTS_DIR]

`rest` speaks HTTP with the standard library's client (http.client, which
lets a test send any Host header); `guarded` checks what the API never lets
a page do (set a program to run or open the server, answer two Host
headers, read a body announced larger than the limit) over raw sockets;
`browser` drives the real page in headless
Chromium through Selenium and Debian's chromedriver. Each check that fails
raises; the exit status is non-zero and the message says which. Run by
tests/tests/web.rs, which starts the server on a demo data home.
"""

import http.client
import json
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.parse


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


# ---------------------------------------------------------------- REST


class Rest:
    def __init__(self, base, home):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port
        self.own = f"{self.host}:{self.port}"
        self.home = home
        with open(os.path.join(home, "web", "token")) as f:
            self.token = f.read().strip()

    def call(self, method, path, body=None, host=None, headers=None, token=False, raw=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=20)
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", host or self.own)
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        if token:
            hdrs["X-Engram-Token"] = self.token if token is True else token
        if data is not None:
            hdrs["Content-Length"] = str(len(data))
        for k, v in hdrs.items():
            c.putheader(k, v)
        c.endheaders(data)
        r = c.getresponse()
        payload = r.read()
        c.close()
        ctype = r.getheader("Content-Type") or ""
        parsed = json.loads(payload) if ctype.startswith("application/json") else payload
        return r.status, {k.lower(): v for k, v in r.getheaders()}, parsed

    def ok(self, method, path, **kw):
        s, h, b = self.call(method, path, **kw)
        check(200 <= s < 300, f"{method} {path}: {s} {b}")
        return b

    def refused(self, want_status, want_code, method, path, **kw):
        s, h, b = self.call(method, path, **kw)
        check(s == want_status, f"{method} {path}: wanted {want_status}, got {s} {b}")
        check(h.get("content-type", "").startswith("application/json"), f"{method} {path}: error is not JSON")
        check(isinstance(b, dict) and b.get("error", {}).get("message"), f"{method} {path}: no error message: {b}")
        if want_code:
            check(b["error"]["code"] == want_code, f"{method} {path}: code {b['error']['code']} != {want_code}")
        check(not any(k.startswith("access-control-") for k in h), f"{method} {path}: a CORS header was sent")
        return b

    def config_text(self):
        try:
            with open(os.path.join(self.home, "config.toml")) as f:
                return f.read()
        except FileNotFoundError:
            return ""


def fixture():
    """The knowledge tests/tests/web.rs saved before starting the server."""
    e = os.environ
    return {"facts": e["ENGRAM_TEST_FACTS"].split(","), "discovery": e["ENGRAM_TEST_DISCOVERY"],
            "decision": e["ENGRAM_TEST_DECISION"], "stage": e["ENGRAM_TEST_STAGE"],
            "existing": e["ENGRAM_TEST_EXISTING"]}


def rest_knowledge(r):
    k = fixture()
    # Typed memories: the discovery is listed under its type, with its edges.
    kn = r.ok("GET", "/api/knowledge?type=discovery")
    check(kn["type"] == "discovery" and kn["by_type"]["discovery"] >= 1, f"knowledge: {kn}")
    card = next((c for c in kn["knowledge"] if c["id"] == k["discovery"]), None)
    check(card and card["knowledge_type"] == "discovery" and card["edges"] >= 2, f"discovery card: {card}")
    check(all(c["knowledge_type"] == "discovery" for c in kn["knowledge"]), "the type filter let others through")
    check(kn["edge_counts"].get("derives_from", 0) >= 2, f"edge counts: {kn['edge_counts']}")
    issues = r.ok("GET", "/api/knowledge?type=issue&limit=500")["knowledge"]
    check(all(c["knowledge_type"] == "issue" for c in issues), "issue lists another type")
    top = r.ok("GET", "/api/knowledge?connected=true&order=edges&limit=3")["knowledge"]
    check(top and all(c["edges"] > 0 for c in top), f"most connected: {top}")
    check([c["edges"] for c in top] == sorted([c["edges"] for c in top], reverse=True), "not by edges")
    r.refused(400, "bad_request", "GET", "/api/knowledge?type=poem")
    r.refused(400, "bad_request", "GET", "/api/knowledge?order=random")
    # The graph around the discovery: the BFS, the edges with relation and
    # strength, and its reasoning chain back to the two facts.
    g = r.ok("GET", f"/api/knowledge/{k['discovery']}/graph?depth=2")
    check(g["root"] == k["discovery"] and g["max_depth"] == 2, f"graph: {g}")
    ids = {n["id"] for n in g["nodes"]}
    check(set(k["facts"]) <= ids, f"graph nodes: {ids}")
    derives = [e for e in g["edges"] if e["relation"] == "derives_from" and e["from"] == k["discovery"]]
    check({e["to"] for e in derives} == set(k["facts"]), f"derives_from edges: {g['edges']}")
    check(all(0 < e["strength"] <= 1 for e in g["edges"]), "an edge without a strength")
    chain = g["reasoning_chain"]
    check({c["id"] for c in chain} == set(k["facts"]) and all(c["depth"] == 1 for c in chain), f"chain: {chain}")
    conns = {c["node"]["id"]: c for c in g["connections"]}
    check(all(conns[f]["relation"] == "derives_from" and conns[f]["direction"] == "out" for f in k["facts"]),
          f"connections: {g['connections']}")
    # Read from a fact, the same edge is the inverse relation.
    back = r.ok("GET", f"/api/knowledge/{k['facts'][0]}/graph?depth=1")
    check(any(c["relation"] == "derived_into" and c["node"]["id"] == k["discovery"] for c in back["connections"]),
          f"inverse: {back['connections']}")
    check(not back["reasoning_chain"], "a fact has no derivation chain")
    r.refused(404, "not_found", "GET", "/api/knowledge/mem_nope/graph")
    r.refused(400, "bad_request", "GET", f"/api/knowledge/{k['discovery']}/graph?depth=0")
    r.refused(400, "bad_request", "GET", f"/api/knowledge/{k['discovery']}/graph?depth=11")
    conv = r.ok("GET", "/api/conversations")
    check(isinstance(conv["conversations"], list) and "checkpoints" in conv, f"conversations: {conv}")
    r.ok("GET", "/api/conversations?q=redis&include_resumed=true")
    # The staged conflict, and its resolution through memory_resolve's operation.
    st = r.ok("GET", "/api/staging")
    entry = next((e for e in st["staged"] if e["id"] == k["stage"]), None)
    check(entry and entry["status"] == "needs_clarification" and entry["conflict_with"] == k["existing"],
          f"staging: {st}")
    check(st["counts"].get("needs_clarification", 0) >= 1 and st["conflicts"] >= 1, f"staging counts: {st}")
    check(r.ok("GET", "/api/stats")["pending"]["conflicts"] >= 1, "the dashboard does not count the conflict")
    r.refused(400, "bad_request", "GET", "/api/staging?status=maybe")
    path = f"/api/staging/{k['stage']}/resolve"
    r.refused(401, "token_required", "POST", path, body={"action": "merge"})
    r.refused(400, "bad_request", "POST", path, body={"action": "shrug"}, token=True)
    r.refused(400, "bad_request", "POST", path, body={"action": "merge", "why": 1}, token=True)
    r.refused(404, "not_found", "POST", "/api/staging/obs_nope/resolve", body={"action": "merge"}, token=True)
    check(r.ok("GET", "/api/staging?status=needs_clarification")["conflicts"] == st["conflicts"],
          "a refused resolution changed the buffer")
    done = r.ok("POST", path, body={"action": "merge"}, token=True)
    check(done["action"] == "merge" and done["memory_id"] == k["existing"], f"resolve: {done}")
    check(done["conflicts_left"] == st["conflicts"] - 1, f"conflicts left: {done}")
    # Well formed, but the state forbids it: 409, and a malformed one is still a 400.
    again = r.refused(409, "conflict", "POST", path, body={"action": "keep_both"}, token=True)
    check("already resolved" in again["error"]["message"], f"second resolve: {again}")
    r.refused(400, "bad_request", "POST", path, body={"action": "shrug"}, token=True)


def rest(base, home):
    r = Rest(base, home)
    # The page, with the token in it, and every read endpoint.
    s, h, page = r.call("GET", "/")
    check(s == 200 and h["content-type"].startswith("text/html"), f"GET /: {s}")
    check(r.token.encode() in page, "the page does not hold the token")
    check(b"https://" not in page and b"http://" not in page, "the page loads something from the network")
    for asset in ["/app.js", "/app.css", "/favicon.svg"]:
        s, h, body = r.call("GET", asset)
        check(s == 200 and len(body) > 100, f"{asset}: {s}")
    stats = r.ok("GET", "/api/stats")
    check(stats["memories"]["live"] > 0 and stats["sessions"]["total"] > 0, f"stats: {stats}")
    for path in ["/api", "/api/projects", "/api/sessions", "/api/sessions/active", "/api/timeline?zoom=day",
                 "/api/memories?limit=5", "/api/config", "/api/export", "/api/predictor/status",
                 "/api/predictor/comparisons", "/api/predictor/training", "/api/predictor/drift",
                 "/api/diagnostics", "/api/diagnostics/predictor", "/api/analytics/latency",
                 "/api/analytics/errors"]:
        r.ok("GET", path)
    ops = {o["op"]: o for o in r.ok("GET", "/api/analytics/latency")["operations"]}
    check("hook.user-prompt-submit" in ops and "score.prompt" in ops, f"latency: {sorted(ops)}")
    check(ops["score.prompt"]["count"] >= 1 and ops["score.prompt"]["p50_ms"] > 0, f"latency: {ops['score.prompt']}")
    cmp = r.ok("GET", "/api/predictor/comparisons?limit=2")
    check(len(cmp["comparisons"]) == min(2, cmp["total"]), f"comparisons page: {cmp}")
    check(r.ok("GET", "/api/predictor/comparisons?winner=predictor")["total"] <= cmp["total"], "winner filter")
    found = r.ok("GET", "/api/search?q=" + urllib.parse.quote("redis connection refused"))
    check(found["results"] and "redis" in found["results"][0]["text"].lower(), f"search: {found}")
    check(all(x["reasons"] for x in found["results"]), "a search result has no reason")
    sess = r.ok("GET", "/api/sessions?limit=1")["sessions"][0]
    detail = r.ok("GET", "/api/sessions/" + urllib.parse.quote(sess["session"], safe=""))
    check("rankings" in detail and "events_list" in detail, f"session detail: {list(detail)}")

    # DNS rebinding: a foreign Host is refused, even for reads.
    r.refused(403, "foreign_host", "GET", "/api/stats", host="evil.example:%d" % r.port)
    r.refused(403, "foreign_host", "GET", "/", host="attacker.test")

    # Writes: refused without the token, with a wrong one, from another
    # origin, with a malformed or mistyped body; nothing is written.
    before = r.ok("GET", "/api/memories?limit=1")["total"]
    good = {"text": "The staging database is reset every Sunday night", "type": "fact", "tags": ["ops"]}
    r.refused(401, "token_required", "POST", "/api/memories", body=good)
    r.refused(403, "bad_token", "POST", "/api/memories", body=good, token="0" * 64)
    r.refused(403, "cross_origin", "POST", "/api/memories", body=good, token=True,
              headers={"Origin": "http://evil.example"})
    for raw in [b'{"text": "x", "type": "fact"', b"not json", b"[1, 2]", b'{"text": "x", "type": "poem"}',
                b'{"text": "x", "type": "fact", "extra": 1}', b'{"text": "   ", "type": "fact"}',
                b'{"text": "x", "type": "fact", "importance": "high"}']:
        r.refused(400, "bad_request", "POST", "/api/memories", raw=raw, token=True,
                  headers={"Content-Type": "application/json"})
    # One tag limit for every writer (32 tags of at most 64 characters).
    for tags in [[f"t{i}" for i in range(33)], [f"t{i}" for i in range(40000)], ["x" * 65]]:
        b = r.refused(400, "bad_request", "POST", "/api/memories", token=True,
                      body={"text": "A memory with too many tags", "type": "fact", "tags": tags})
        check("32" in b["error"]["message"] or "64" in b["error"]["message"], f"tags: {b}")
    r.refused(415, None, "POST", "/api/memories", raw=b"text=x", token=True,
              headers={"Content-Type": "application/x-www-form-urlencoded"})
    # Over the 1 MiB limit: refused from its Content-Length before any of it
    # is sent, and, sent chunked (no length announced), once 1 MiB is read.
    head = (f"POST /api/memories HTTP/1.1\r\nHost: {r.own}\r\nContent-Type: application/json\r\n"
            f"X-Engram-Token: {r.token}\r\n")
    status, body, _ = raw_http(r, (head + f"Content-Length: {2 << 20}\r\n\r\n").encode())
    check(status == 413 and body["error"]["code"] == "too_large", f"announced 2 MiB: {status} {body}")
    big = b'{"text":"' + b"x" * (2 << 20) + b'","type":"fact"}'
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (big[i:i + 65536] for i in range(0, len(big), 65536)))
    status, body, _ = raw_http(r, (head + "Transfer-Encoding: chunked\r\n\r\n").encode(), chunked + b"0\r\n\r\n")
    check(status == 413 and body["error"]["code"] == "too_large", f"chunked 2 MiB: {status} {body}")
    r.refused(404, "not_found", "GET", "/api/nope")
    r.refused(405, None, "PUT", "/api/stats", token=True, body={})
    r.refused(400, "bad_request", "GET", "/api/sessions?limit=0")
    r.refused(400, "bad_request", "GET", "/api/memories?unknown=1")
    r.refused(404, "not_found", "PATCH", "/api/memories/mem_nope", body={"importance": 0.5}, token=True)
    s, h, _ = r.call("OPTIONS", "/api/memories", headers={"Origin": "http://evil.example",
                                                          "Access-Control-Request-Method": "POST"})
    check(s >= 400 and not any(k.startswith("access-control-") for k in h), f"preflight: {s} {h}")
    check(r.ok("GET", "/api/memories?limit=1")["total"] == before, "a refused write changed the memories")

    # A good write lands (and a rating and a pin), then is forgotten.
    made = r.call("POST", "/api/memories", body=good, token=True)
    check(made[0] == 201, f"create: {made}")
    mid = made[2]["id"]
    check(r.ok("GET", "/api/memories?limit=1")["total"] == before + 1, "the new memory is not listed")
    r.ok("POST", f"/api/memories/{mid}/pin", token=True)
    r.ok("POST", f"/api/memories/{mid}/feedback", body={"relevance": 0.9, "reason": "test"}, token=True)
    r.refused(400, "bad_request", "PATCH", f"/api/memories/{mid}", body={"tags": [f"t{i}" for i in range(33)]},
              token=True)
    changed = r.ok("PATCH", f"/api/memories/{mid}", body={"importance": 0.9, "tags": ["ops", "db"]}, token=True)
    check(changed["pinned"] and sorted(changed["tags"]) == ["db", "ops"], f"update: {changed}")
    r.ok("DELETE", f"/api/memories/{mid}", body={"reason": "test over"}, token=True)
    check(r.ok("GET", "/api/memories?limit=1")["total"] == before, "the forgotten memory is still listed")

    # Settings: a bad value is refused and the file is untouched; a good one
    # is written to config.toml.
    text = r.config_text()
    r.refused(400, "bad_request", "PUT", "/api/config", body={"predictor.exploration_rate": 7}, token=True)
    r.refused(400, "bad_request", "PUT", "/api/config", body={"predictor.nope": 1}, token=True)
    r.refused(400, "bad_request", "PUT", "/api/config", body={"injection.prompt_k": "five"}, token=True)
    check(r.config_text() == text, "a refused setting changed config.toml")
    r.ok("PUT", "/api/config", body={"injection.prompt_k": 4}, token=True)
    check("prompt_k = 4" in r.config_text(), f"config.toml: {r.config_text()}")
    rest_knowledge(r)
    print("rest: ok")


# ---------------------------------------------------------------- guarded


def raw_http(r, request, body=None, timeout=10):
    """Sends `request` (bytes, headers only or whole) on a fresh connection,
    and `body` from another thread (the server may answer, and stop reading,
    before it is all sent); returns the response's status, its JSON body and
    the seconds it took."""
    start = time.time()
    with socket.create_connection((r.host, r.port), timeout=timeout) as sock:
        sock.sendall(request)
        if body is not None:
            def send():
                try:
                    sock.sendall(body)
                except OSError:
                    pass
            threading.Thread(target=send, daemon=True).start()
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            check(chunk, f"the connection closed before a response: {data!r}")
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        length = next((int(l.split(":", 1)[1]) for l in lines[1:] if l.lower().startswith("content-length:")), 0)
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
    return status, json.loads(rest[:length] or b"null"), time.time() - start


def guarded(base, home):
    """Each part runs even when another fails; every failure is reported."""
    r = Rest(base, home)
    failures = []
    for part in (locked_settings, two_hosts, huge_bodies):
        try:
            part(r, home)
        except (AssertionError, OSError, KeyError, TypeError) as e:
            failures.append(f"{part.__name__}: {type(e).__name__}: {e}")
    check(not failures, "\n".join(failures))
    print("guarded: ok")


def locked_settings(r, home):
    # Programs to run, endpoints and remote access: refused with 403 naming
    # the key, alone or beside an editable setting, and config.toml is untouched.
    text = r.config_text()
    marker = os.path.join(home, "ran-a-program")
    run_it = ["sh", "-c", f"touch {marker}"]
    locked = [("extractor.command", run_it), ("judge.command", run_it), ("knowledge.summary.command", run_it),
              ("knowledge.graph.discovery.command", run_it), ("knowledge.dedup.command", run_it),
              ("extractor.command", None), ("web.allow_remote", True), ("web.bind", "0.0.0.0"),
              ("web.allowed_hosts", ["evil.example:37820"])]
    for key, value in locked:
        for body in [{key: value}, {"injection.prompt_k": 5, key: value}]:
            b = r.refused(403, "setting_locked", "PUT", "/api/config", body=body, token=True)
            check(key in b["error"]["message"], f"the error does not name {key}: {b}")
    check(r.config_text() == text, f"a refused setting changed config.toml: {r.config_text()}")
    fields = {f["key"]: f for s in r.ok("GET", "/api/config")["sections"] for f in s["fields"]}
    for key, _ in locked:
        check(fields[key].get("locked") is True and "config.toml" in fields[key]["locked_reason"],
              f"{key}: {fields[key]}")
    check(fields["injection.prompt_k"]["locked"] is False, "an ordinary setting is locked")
    r.ok("PUT", "/api/config", body={"injection.prompt_k": 5, "extractor.timeout_ms": 9000}, token=True)
    check("prompt_k = 5" in r.config_text() and "command" not in r.config_text(), r.config_text())


def two_hosts(r, home):
    # Two Host headers (RFC 9110 §7.2): 400, whichever comes first.
    for hosts in [(r.own, "evil.example"), ("evil.example", r.own), (r.own, r.own)]:
        req = f"GET /api/stats HTTP/1.1\r\nHost: {hosts[0]}\r\nHost: {hosts[1]}\r\nConnection: close\r\n\r\n"
        status, body, _ = raw_http(r, req.encode())
        check(status == 400 and body["error"]["code"] == "duplicate_host", f"two Hosts {hosts}: {status} {body}")


def huge_bodies(r, home):
    # A body announced larger than the limit is refused from its header,
    # before any of it is sent (the client would otherwise wait forever).
    for method, path in [("POST", "/api/memories"), ("PUT", "/api/config"), ("PATCH", "/api/memories/mem_x")]:
        req = (f"{method} {path} HTTP/1.1\r\nHost: {r.own}\r\nContent-Type: application/json\r\n"
               f"X-Engram-Token: {r.token}\r\nContent-Length: 10000000000\r\n\r\n")
        status, body, took = raw_http(r, req.encode())
        check(status == 413 and body["error"]["code"] == "too_large", f"{method} {path}: {status} {body}")
        check(took < 5, f"{method} {path}: the 413 took {took:.1f}s")


# ---------------------------------------------------------------- browser


def browser(base, home, shots):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    opts = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1280,900"]:
        opts.add_argument(a)
    # The profile in a folder of the test's own (HOME is the test's world).
    opts.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="chromium-profile-", dir=os.environ["HOME"]))
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
    wait = WebDriverWait(d, 15)
    js = d.execute_script

    def ready(view):
        wait.until(lambda _: js("return document.body.dataset.ready") == view
                   and not js("return document.getElementById('main').hasAttribute('aria-busy')"))

    def goto(hash_, view):
        js("document.body.dataset.ready = ''")
        js("location.hash = arguments[0]", hash_)
        ready(view)

    def click(el):
        js("arguments[0].scrollIntoView({block: 'center'})", el)
        el.click()

    def text():
        return d.find_element(By.ID, "main").text

    def shot(name):
        if shots:
            theme = js("return document.documentElement.dataset.theme")
            h = js("return Math.max(document.body.scrollHeight, 900)")
            d.set_window_size(1280, min(h + 40, 4000))
            d.save_screenshot(os.path.join(shots, f"{name}-{theme}.png"))
            d.set_window_size(1280, 900)

    def no_script_errors():
        for entry in d.get_log("browser"):
            msg = entry["message"]
            if entry["level"] == "SEVERE":
                fail(f"browser console: {msg}")

    views = [("#/", "dashboard", "Dashboard"), ("#/search?q=redis", "search", "Search"),
             ("#/timeline", "timeline", "Timeline"), ("#/knowledge", "knowledge", "Knowledge"),
             ("#/graph", "graph", "Graph explorer"), ("#/staging", "staging", "Staging"),
             ("#/sessions", "sessions", "Sessions"), ("#/predictor", "predictor", "Predictor"),
             ("#/settings", "settings", "Settings")]
    try:
        started = time.monotonic()
        d.get(base)
        ready("dashboard")
        print(f"browser: first load to a rendered dashboard in {1000 * (time.monotonic() - started):.0f} ms")
        check("Memories".upper() in text().upper(), "the dashboard has no memory count")

        # Every view, in both themes, through the nav.
        for theme in ["light", "dark"]:
            if js("return document.documentElement.dataset.theme") != theme:
                d.find_element(By.ID, "theme").click()
                check(js("return document.documentElement.dataset.theme") == theme, "the theme button")
            for hash_, view, title in views:
                goto(hash_, view)
                check(title.lower() in d.find_element(By.CSS_SELECTOR, "#main h1").text.lower(),
                      f"{view}: title {d.find_element(By.CSS_SELECTOR, '#main h1').text!r}")
                check("Could not load" not in text(), f"{view}: {text()[:300]}")
                current = d.find_elements(By.CSS_SELECTOR, "#nav a[aria-current=page]")
                check(view == "dashboard" or (current and current[0].get_attribute("data-view") == view),
                      f"{view}: the nav does not mark it")
                shot(view)
        no_script_errors()

        # Search from the box: results with their reasons, one opened.
        goto("#/search", "search")
        box = d.find_element(By.ID, "search-q")
        box.send_keys("redis tests", Keys.ENTER)
        wait.until(lambda _: d.find_elements(By.CSS_SELECTOR, "#results .result"))
        first = d.find_elements(By.CSS_SELECTOR, "#results .result")[0]
        check("redis" in first.text.lower(), f"first result: {first.text}")
        check(first.find_elements(By.CSS_SELECTOR, ".reasons li"), "the first result shows no reason")
        check("q=redis" in d.current_url, d.current_url)

        # Keyboard: focus a result with Tab, open it with Enter, close with Esc.
        js("arguments[0].focus()", first)
        first.send_keys(Keys.ENTER)
        wait.until(lambda _: "open" in d.find_element(By.ID, "panel").get_attribute("class"))
        wait.until(lambda _: "Loading" not in d.find_element(By.ID, "panel").text)
        check("memory" in d.find_element(By.ID, "panel").text.lower(), "the detail panel is empty")
        shot("memory-panel")
        d.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda _: "open" not in d.find_element(By.ID, "panel").get_attribute("class"))
        # "/" from any view goes to search with the box focused; "t" switches theme.
        goto("#/timeline", "timeline")
        d.find_element(By.TAG_NAME, "body").send_keys("/")
        ready("search")
        wait.until(lambda _: d.switch_to.active_element.get_attribute("id") == "search-q")
        d.find_element(By.ID, "main").click()
        before = js("return document.documentElement.dataset.theme")
        js("document.activeElement.blur()")
        d.find_element(By.TAG_NAME, "body").send_keys("t")
        check(js("return document.documentElement.dataset.theme") != before, "t did not switch the theme")
        # Number keys open the views in the nav's order; Tab reaches the nav links.
        d.find_element(By.TAG_NAME, "body").send_keys("3")
        ready("timeline")
        d.find_element(By.TAG_NAME, "body").send_keys("1")
        ready("dashboard")
        js("document.querySelector('.skip').focus()")
        for _ in range(3):
            d.switch_to.active_element.send_keys(Keys.TAB)
        focused = d.switch_to.active_element
        check(focused.get_attribute("data-view") == "search", f"Tab order: {focused.get_attribute('outerHTML')[:120]}")
        focused.send_keys(Keys.ENTER)
        ready("search")

        # Timeline: day zoom, a block expanded, more loaded.
        goto("#/timeline?zoom=day", "timeline")
        windows = len(d.find_elements(By.CSS_SELECTOR, ".win"))
        click(d.find_element(By.CSS_SELECTOR, ".block button[aria-expanded]"))
        wait.until(lambda _: d.find_elements(By.CSS_SELECTOR, ".block .mini .ev"))
        more = d.find_element(By.ID, "load-more")
        if more.is_displayed():
            click(more)
            wait.until(lambda _: len(d.find_elements(By.CSS_SELECTOR, ".win")) > windows)

        # Knowledge: filter by a type chip, open a card, pin it from the page.
        goto("#/knowledge", "knowledge")
        chip = d.find_elements(By.CSS_SELECTOR, ".chips .chip[data-type]")[0]
        kind = chip.get_attribute("data-type")
        click(chip)
        ready("knowledge")
        check(f"type={kind}" in d.current_url, d.current_url)
        card = d.find_element(By.CSS_SELECTOR, ".kcard")
        mid = card.get_attribute("data-id")
        click(card)
        button = "return [...document.querySelectorAll('#panel button')].find((b) => b.textContent === arguments[0])"
        pin = wait.until(lambda _: js(button, "Pin"))
        # By keyboard: the panel may still be sliding in.
        js("arguments[0].focus()", pin)
        pin.send_keys(Keys.ENTER)
        wait.until(lambda _: js(button, "Unpin"))
        r = Rest(base, home)
        check(r.ok("GET", f"/api/memories/{mid}")["pinned"], "pinning from the page did not land")

        # The graph explorer: a discovery's card opens its reasoning chain and
        # connections; the graph view shows the traversal around it.
        k = fixture()
        goto("#/knowledge?type=discovery", "knowledge")
        click(d.find_element(By.CSS_SELECTOR, f".kcard[data-id='{k['discovery']}']"))
        wait.until(lambda _: d.find_elements(By.CSS_SELECTOR, "#panel [data-chain]"))
        panel_text = d.find_element(By.ID, "panel").text
        check("Reasoning chain (2 steps)" in panel_text and "DERIVES FROM" in panel_text.upper(), panel_text[:600])
        chained = {e.get_attribute("data-chain") for e in d.find_elements(By.CSS_SELECTOR, "#panel [data-chain]")}
        check(chained == set(k["facts"]), f"chain in the panel: {chained}")
        shot("graph-panel")
        js("document.getElementById('panel').focus()")
        d.switch_to.active_element.send_keys(Keys.ESCAPE)
        goto(f"#/graph?id={k['discovery']}", "graph")
        nodes = {e.get_attribute("data-node") for e in d.find_elements(By.CSS_SELECTOR, "#main [data-node]")}
        check(set(k["facts"]) | {k["discovery"]} <= nodes, f"graph view nodes: {nodes}")
        check(d.find_elements(By.CSS_SELECTOR, "#main table.edges tr[data-edge]"), "the graph view lists no edge")
        shot("graph-around")
        chain_walk(d, wait, js, click, ready, goto, shot, k)

        # Staging: the conflict side by side, resolved from the page.
        goto("#/staging", "staging")
        conflict = d.find_element(By.CSS_SELECTOR, f".conflict[data-stage='{k['stage']}']")
        check("7411" in conflict.text and "7412" in conflict.text, conflict.text)
        shot("staging-conflict")
        click(conflict.find_element(By.CSS_SELECTOR, "button[data-action='replace']"))
        wait.until(lambda _: not d.find_elements(By.CSS_SELECTOR, f".conflict[data-stage='{k['stage']}']"))
        ready("staging")
        check(d.find_elements(By.CSS_SELECTOR, f".item[data-stage='{k['stage']}']"), "the resolved entry is not listed")
        st = Rest(base, home).ok("GET", "/api/staging")
        entry = next(e for e in st["staged"] if e["id"] == k["stage"])
        check(entry["resolution"] == "replace" and entry["resolved_by"] == "user", f"resolved: {entry}")
        shot("staging-resolved")

        # A session: what was injected and whether it helped.
        goto("#/sessions", "sessions")
        click(d.find_element(By.CSS_SELECTOR, "#main a.item[data-session]"))
        ready("session")
        check("Injections" in text() and "Events" in text(), text()[:300])
        shot("session")

        # Settings: change one, save, and find it in config.toml.
        goto("#/settings", "settings")
        # Programs to run and remote access are shown, read-only.
        for key in ["extractor-command", "judge-command", "knowledge-summary-command", "web-allow_remote", "web-bind"]:
            locked = js(f"const f = document.getElementById('f-{key}'); "
                        "return f && [f.readOnly, f.closest('[data-locked]') !== null]")
            check(locked == [True, True], f"{key} is not shown read-only: {locked}")
        field = d.find_element(By.ID, "f-injection-session_start_k")
        field.clear()
        field.send_keys("6")
        save = d.find_element(By.ID, "save-settings")
        wait.until(lambda _: save.is_enabled())
        click(save)
        deadline = time.time() + 10
        while "session_start_k = 6" not in r.config_text() and time.time() < deadline:
            time.sleep(0.1)
        check("session_start_k = 6" in r.config_text(), f"config.toml: {r.config_text()}")
        ready("settings")
        # Read in one script call, polled: the view may still re-render after
        # the save, which makes a found element stale.
        value = lambda: js("const f = document.getElementById('f-injection-session_start_k'); return f && f.value")
        deadline = time.time() + 10
        while value() != "6" and time.time() < deadline:
            time.sleep(0.1)
        check(value() == "6", "reloaded value")
        # An out-of-range value is not saved.
        field = d.find_element(By.ID, "f-predictor-exploration_rate")
        field.clear()
        field.send_keys("3")
        check(not d.find_element(By.ID, "save-settings").is_enabled(), "an out-of-range value could be saved")
        check("must be" in d.find_element(By.CSS_SELECTOR, "[data-key='predictor.exploration_rate'] .e").text,
              "no message for an out-of-range value")
        no_script_errors()
        print("browser: ok")
    finally:
        d.quit()


def chain_walk(d, wait, js, click, ready, goto, shot, k):
    """The decision's reasoning chain walked step by step in the panel: by
    mouse (chain step, chain step, back, a breadcrumb) and by keyboard (Tab
    to a step, Enter, Backspace back); the crumbs name each step and mark the
    current one; then node to node in the graph view and the browser's back."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def crumbs():
        # Read in one script: the panel re-renders as it goes.
        return [tuple(c) for c in js("return [...document.querySelectorAll('#panel nav.crumbs button')].map("
                                     "(b) => [b.dataset.crumb || null, b.getAttribute('aria-current'), b.textContent])")]

    def settled(path):
        wait.until(lambda _: [c[0] for c in crumbs()] == path
                   and not js("return document.getElementById('panel').textContent.includes('Loading')"))
        c = crumbs()
        check([x[1] for x in c] == [None] * (len(c) - 1) + ["page"], f"aria-current on the crumbs: {c}")
        check(all(x[2] and not x[2].startswith("mem_") for x in c), f"a crumb does not name its memory: {c}")
        check(bool(d.find_elements(By.CSS_SELECTOR, "#panel button[aria-label=Back]")) == (len(path) > 1),
              f"the Back button at depth {len(path)}")

    def step(mid):
        return d.find_element(By.CSS_SELECTOR, f"#panel [data-chain='{mid}'] button")

    dec, disc, facts = k["decision"], k["discovery"], k["facts"]
    goto("#/knowledge?type=decision", "knowledge")
    click(d.find_element(By.CSS_SELECTOR, f".kcard[data-id='{dec}']"))
    wait.until(lambda _: d.find_elements(By.CSS_SELECTOR, "#panel [data-chain]"))
    chain = {e.get_attribute("data-chain") for e in d.find_elements(By.CSS_SELECTOR, "#panel [data-chain]")}
    check(chain == {disc, *facts}, f"the decision's chain: {chain}")
    check("Reasoning chain (3 steps)" in d.find_element(By.ID, "panel").text, d.find_element(By.ID, "panel").text[:400])
    check(not crumbs(), "crumbs before any step")

    # By mouse: decision → discovery → a fact, back, then the first crumb.
    click(step(disc))
    settled([dec, disc])
    click(step(facts[0]))
    settled([dec, disc, facts[0]])
    check(not d.find_elements(By.CSS_SELECTOR, "#panel [data-chain]"), "a fact shows a reasoning chain")
    shot("chain-walk")
    click(d.find_element(By.CSS_SELECTOR, "#panel button[aria-label=Back]"))
    settled([dec, disc])
    check({e.get_attribute("data-chain") for e in d.find_elements(By.CSS_SELECTOR, "#panel [data-chain]")}
          == set(facts), "back did not show the discovery's chain")
    click(d.find_element(By.CSS_SELECTOR, f"#panel nav.crumbs button[data-crumb='{dec}']"))
    wait.until(lambda _: not crumbs() and d.find_elements(By.CSS_SELECTOR, f"#panel [data-chain='{disc}']"))

    # By keyboard: Tab from the panel to a chain step, Enter; Backspace goes back.
    def tab_to(mid):
        js("document.getElementById('panel').focus()")
        for _ in range(40):
            d.switch_to.active_element.send_keys(Keys.TAB)
            if js("const c = document.activeElement.closest('[data-chain]'); return c && c.dataset.chain") == mid:
                return d.switch_to.active_element
        fail(f"Tab never reached the chain step {mid}")

    tab_to(disc).send_keys(Keys.ENTER)
    settled([dec, disc])
    tab_to(facts[1]).send_keys(Keys.ENTER)
    settled([dec, disc, facts[1]])
    d.switch_to.active_element.send_keys(Keys.BACKSPACE)
    settled([dec, disc])
    d.switch_to.active_element.send_keys(Keys.BACKSPACE)
    wait.until(lambda _: not crumbs() and d.find_elements(By.CSS_SELECTOR, f"#panel [data-chain='{disc}']"))
    d.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait.until(lambda _: "open" not in d.find_element(By.ID, "panel").get_attribute("class"))

    # The graph view: node to node by mouse, and the browser's back retraces them.
    goto(f"#/graph?id={dec}", "graph")
    js("document.body.dataset.ready = ''")
    click(d.find_element(By.CSS_SELECTOR, f"#main [data-node='{disc}']"))
    ready("graph")
    check(f"id={disc}" in d.current_url and d.find_element(By.CSS_SELECTOR, "#main .kcard.focus").get_attribute(
        "data-node") == disc, d.current_url)
    js("document.body.dataset.ready = ''")
    click(d.find_element(By.CSS_SELECTOR, f"#main [data-node='{facts[0]}']"))
    ready("graph")
    check(f"id={facts[0]}" in d.current_url, d.current_url)
    js("document.body.dataset.ready = ''")
    d.back()
    ready("graph")
    check(f"id={disc}" in d.current_url and d.find_element(By.CSS_SELECTOR, "#main .kcard.focus").get_attribute(
        "data-node") == disc, f"back: {d.current_url}")
    print("browser: chain walked by mouse and keyboard")


if __name__ == "__main__":
    mode, base, home = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "rest":
        rest(base, home)
    elif mode == "guarded":
        guarded(base, home)
    elif mode == "browser":
        browser(base, home, sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        fail(f"unknown mode {mode}")
