#!/usr/bin/env python3
"""bench/web: what `tftap serve` costs on large runs (and sends for the first view of one), and whether hostile or
many clients can starve it. usage: bench_web.py TFTAP DB RUN_A RUN_B
(bench/web/run.sh writes a run with bench/store/bench_store). Prints one line per measure; the bounds issue 26
names are said beside them. Times are wall clock on a loaded machine:
read them as orders of magnitude."""
import http.client
import re
import socket
import subprocess
import sys
import threading
import time

TFTAP, DB, A, B = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def start():
    p = subprocess.Popen([TFTAP, "serve", "--db", DB], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.match(r"^http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{32})$", p.stdout.readline().strip())
    return p, int(m.group(1)), m.group(2)


p, port, token = start()


def get(path, timeout=600, gzip=False):
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Host": "127.0.0.1:%d" % port, "X-Tftap-Token": token}
    if gzip:
        h["Accept-Encoding"] = "gzip, deflate, br"  # what chromium sends
    c.request("GET", path, headers=h)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, len(body), time.monotonic() - t0


def rss():
    s = open("/proc/%d/status" % p.pid).read()
    return {k: int(re.search(k + r":\s+(\d+)", s).group(1)) // 1024 for k in ("VmRSS", "VmHWM")}


print("idle: %(VmRSS)d MB resident" % rss())
for path in ["/api/runs", "/api/runs/%d" % A, "/api/runs/%d/calls?limit=200" % A, "/api/runs/%d/changes" % A,
             "/api/runs/%d/check" % A, "/api/runs/%d/verdict" % A, "/api/diff/%d/%d" % (A, B)]:
    st, n, t = get(path)
    print("%-40s %d %9d bytes %7.2f s   peak %d MB" % (path, st, n, t, rss()["VmHWM"]))

# The first view of /runs/A: what the page fetches before the user does
# anything (its shell and assets, the run, its verdict, a page of calls,
# 20 changes, the runs before it for the diff base), bodies as sent,
# without and with gzip.
first = ["/runs/%d" % A, "/assets/app.css", "/assets/app.js", "/assets/favicon.svg", "/api/runs/%d" % A,
         "/api/runs/%d/verdict" % A, "/api/runs/%d/calls?limit=200" % A, "/api/runs/%d/changes?offset=0&limit=20" % A,
         "/api/runs?before=%d&limit=200" % A]
plain, packed = (sum(get(path, gzip=z)[1] for path in first) for z in (False, True))
print("first view of /runs/%d: %d bytes as they are, %d gzip-compressed (bodies)" % (A, plain, packed))

# Four diffs at once, and the runs list meanwhile (bound: /api/runs within 100 ms).
p.terminate()
p.wait()
p, port, token = start()
times, lists = [], []
threads = [threading.Thread(target=lambda: times.append(get("/api/diff/%d/%d" % (A, B))[2])) for _ in range(4)]
for t in threads:
    t.start()
while any(t.is_alive() for t in threads):
    lists.append(get("/api/runs")[2])
    time.sleep(0.2)
for t in threads:
    t.join()
lists.sort()
print("4 diffs at once: %s s; peak %d MB (bound 600 MB); /api/runs meanwhile: median %.0f ms, max %.0f ms (bound 100 ms)"
      % (", ".join("%.1f" % t for t in sorted(times)), rss()["VmHWM"], 1000 * lists[len(lists) // 2], 1000 * lists[-1]))

# 64 clients trickling a byte of their headers now and then (bound: a
# request answered within 1 s).
trickle = [socket.create_connection(("127.0.0.1", port)) for _ in range(64)]
for s in trickle:
    s.sendall(b"GET /api/runs HTTP/1.1\r\nX-A: ")
lat = []
for _ in range(10):
    for s in trickle:
        try:
            s.sendall(b"a")
        except OSError:
            pass
    lat.append(get("/api/runs", timeout=30)[2])
lat.sort()
print("64 trickling clients: /api/runs median %.0f ms, max %.0f ms (bound 1 s)" % (1000 * lat[len(lat) // 2], 1000 * lat[-1]))
for s in trickle:
    s.close()
p.terminate()
p.wait()
