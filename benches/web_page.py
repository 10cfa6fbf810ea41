"""The web UI's first page load as a user sees it, in headless Chromium.

    web_page.py cold URL PROFILE_DIR      one load in a fresh browser profile
    web_page.py warm URL PROFILE_DIR N    N loads in one browser (cache and server warm)

Each load prints one JSON line of times in ms from navigation start
(Navigation Timing, Resource Timing and the marks app.js sets): `html` (the
page received), `assets` (app.js and app.css received), `api_start` and
`api_end` (the dashboard's /api/stats and /api/projects fetched), `api_server`
(the slower API call's request-to-first-byte: the server's work plus
loopback), `ready` (the dashboard's data in the DOM), `painted` (a frame
later: drawn), `fcp` (first contentful paint). Run by
benches/benches/web_page.rs, which starts the server on its data home.
"""

import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

TIMES = """
const nav = performance.getEntriesByType('navigation')[0];
const res = performance.getEntriesByType('resource');
const mark = (n) => { const m = performance.getEntriesByName(n)[0]; return m ? m.startTime : null; };
const of = (re) => res.filter((r) => re.test(new URL(r.name).pathname));
const assets = of(/^\\/app\\.(js|css)$/);
const apis = of(/^\\/api\\/(stats|projects)$/);
const fcp = performance.getEntriesByName('first-contentful-paint')[0];
return {
  html: nav.responseEnd,
  assets: Math.max(...assets.map((r) => r.responseEnd)),
  api_start: Math.min(...apis.map((r) => r.startTime)),
  api_end: Math.max(...apis.map((r) => r.responseEnd)),
  api_server: Math.max(...apis.map((r) => r.responseStart - r.requestStart)),
  ready: mark('engram:ready'),
  painted: mark('engram:painted'),
  fcp: fcp ? fcp.startTime : null,
  n_api: apis.length,
  n_stats: of(/^\/api\/stats$/).length,
};
"""


def browser(profile):
    opts = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1280,900", f"--user-data-dir={profile}"]:
        opts.add_argument(a)
    return webdriver.Chrome(options=opts, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))


def load(d, url):
    d.get("about:blank")
    d.get(url)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        t = d.execute_script(TIMES)
        if t["painted"] is not None and t["n_api"] >= 2:
            if d.execute_script("return document.body.dataset.ready") != "dashboard":
                raise AssertionError("the first view is not the dashboard")
            if "MEMORIES" not in d.find_element("id", "main").text.upper():
                raise AssertionError("the dashboard shows no memory count")
            print(json.dumps(t), flush=True)
            return
        time.sleep(0.02)
    raise AssertionError("the dashboard was not drawn within 20 s")


def main():
    mode, url, profile = sys.argv[1], sys.argv[2], sys.argv[3]
    n = int(sys.argv[4]) if mode == "warm" else 1
    d = browser(profile)
    try:
        for _ in range(n):
            load(d, url)
    finally:
        d.quit()


if __name__ == "__main__":
    main()
