#!/usr/bin/env python3
"""test_archive_tools.py - the README's STALLSCOPE_ARCHIVE_COMMAND examples, as
the README writes them, with real transfer tools:

  - the rsync line, its remote `collector:/traces` replaced by a local directory
    (rsync's own transfer path, no ssh): every sealed segment arrives intact in
    a directory of the host's name, once;
  - the `curl --aws-sigv4` line, its https://s3.example.com replaced by an
    S3-like stub on loopback that checks each request's AWS Signature Version 4
    (canonical request, scope, the signing key derived from the secret, the
    x-amz-content-sha256 header S3 requires) and refuses a bad one with 403, as
    S3 does: every segment is uploaded intact
    with a valid signature; with a wrong secret every upload is refused, the
    failures are counted and the segments stay pending (unmarked).

The import --db line is tested by tests/store/test_pg_store.py against a
PostgreSQL cluster of its own. SKIP (77) when rsync or curl is missing.

usage: test_archive_tools.py EXAMPLE_RUNTIME SOURCE_ROOT
"""
import hashlib
import hmac
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

runtime, root = sys.argv[1], sys.argv[2]
KEY, SECRET = "AKIDSTALLSCOPETEST", "s3cr3t/for+the+test"
MAX_REQUESTS = 200


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def readme_commands():
    text = open(os.path.join(root, "README.md")).read()
    cmds = {}
    for m in re.finditer(r"^STALLSCOPE_ARCHIVE_COMMAND='(.*)'$", text, re.M):
        tool = m.group(1).split()[0]
        cmds.setdefault(tool, m.group(1))
    for tool in ("rsync", "curl", "stallscope"):
        if tool not in cmds:
            fail("the README has no STALLSCOPE_ARCHIVE_COMMAND example with %s" % tool)
    return cmds


def sigv4_ok(method, path, headers, body):
    """Checks an AWS Signature Version 4 the way S3 does (header form)."""
    auth = headers.get("Authorization", "")
    m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,\s*"
                 r"SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$", auth)
    if not m:
        return "no SigV4 Authorization header: %r" % auth
    key, date, region, service, signed, signature = m.groups()
    if key != KEY:
        return "unknown access key %s" % key
    amz_date = headers.get("x-amz-date", "")
    if not amz_date.startswith(date):
        return "x-amz-date %r does not match the scope's date %s" % (amz_date, date)
    # S3 refuses a request without it (400 "Missing required header").
    payload = headers.get("x-amz-content-sha256")
    if not payload:
        return "no x-amz-content-sha256 header"
    if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 is not the body's hash"
    names = signed.split(";")
    if "host" not in names or "x-amz-content-sha256" not in names or "x-amz-date" not in names:
        return "host, x-amz-content-sha256 or x-amz-date is not signed: %s" % signed
    canon_headers = "".join("%s:%s\n" % (n, " ".join((headers.get(n) or "").split())) for n in names)
    p, _, query = path.partition("?")
    canon_query = "&".join(sorted(query.split("&"))) if query else ""
    canon = "\n".join([method, p, canon_query, canon_headers, signed, payload])
    scope = "%s/%s/%s/aws4_request" % (date, region, service)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + SECRET).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    want = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, signature):
        return "signature does not match"
    return None


class S3Stub(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store = None

    def log_message(self, *a):
        pass

    def do_PUT(self):
        st = self.server.state
        st["requests"] += 1
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        why = sigv4_ok("PUT", self.path, self.headers, body) if st["requests"] <= MAX_REQUESTS else "too many"
        if why:
            st["refused"].append(why)
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        dest = os.path.join(st["dir"], self.path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        st["puts"].append(self.path)
        with open(dest, "wb") as f:
            f.write(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def record(outdir, cmd, secs, env_extra):
    env = dict(os.environ, STALLSCOPE_ENABLED="1", STALLSCOPE_OUTPUT_DIR=outdir, STALLSCOPE_ROTATION_PERIOD_S="1",
               STALLSCOPE_CPU_SAMPLING="0", STALLSCOPE_METRICS_FILE=os.path.join(outdir, "metrics.prom"),
               STALLSCOPE_ARCHIVE_COMMAND=cmd, STALLSCOPE_ARCHIVE_TIMEOUT_S="30", **env_extra)
    r = subprocess.run([runtime, "--duration", str(secs)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    if r.returncode != 0:
        fail("the example runtime failed: %s" % r.stdout[-2000:])
    return r.stdout


def metrics(outdir):
    out = {}
    for line in open(os.path.join(outdir, "metrics.prom")):
        if line.startswith("stallscope_archive") and " " in line:
            k, v = line.split()[:2]
            out[k] = float(v)
    return out


def sealed(outdir):
    return sorted(n for n in os.listdir(outdir) if n.endswith(".bin"))


def check_shipped(outdir, dest, what):
    names = sealed(outdir)
    if len(names) < 2:
        fail("%s: only %d segments sealed" % (what, len(names)))
    for n in names:
        with open(os.path.join(outdir, n), "rb") as a, open(os.path.join(dest, n), "rb") as b:
            if a.read() != b.read():
                fail("%s: %s did not arrive intact" % (what, n))
        if not os.path.exists(os.path.join(outdir, n + ".shipped")):
            fail("%s: %s has no .shipped marker" % (what, n))
    m = metrics(outdir)
    if m.get("stallscope_archive_shipped_total") != len(names) or m.get("stallscope_archive_pending") != 0:
        fail("%s: metrics %s for %d segments" % (what, m, len(names)))
    return names


def main():
    for tool in ("rsync", "curl"):
        if not shutil.which(tool):
            print("SKIP: %s is not installed (Debian: %s)" % (tool, tool))
            sys.exit(77)
    cmds = readme_commands()
    host = socket.gethostname()
    with tempfile.TemporaryDirectory(prefix="stallscope-archive-tools.") as tmp:
        # ---- rsync ---------------------------------------------------------------------
        traces = os.path.join(tmp, "collector")
        cmd = cmds["rsync"].replace("collector:/traces", traces)
        if cmd == cmds["rsync"]:
            fail("the rsync example does not ship to collector:/traces: %s" % cmd)
        rec = os.path.join(tmp, "rec-rsync")
        record(rec, cmd, 3, {})
        names = check_shipped(rec, os.path.join(traces, host), "rsync")
        extra = [n for n in os.listdir(os.path.join(traces, host)) if n not in names]
        if extra:
            fail("rsync left files beside the segments: %s" % extra)

        # ---- curl --aws-sigv4 to an S3-like stub -----------------------------------------
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), S3Stub)
        srv.state = {"dir": os.path.join(tmp, "s3"), "requests": 0, "puts": [], "refused": []}
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            url = "http://127.0.0.1:%d" % srv.server_address[1]
            cmd = cmds["curl"].replace("https://s3.example.com", url)
            if cmd == cmds["curl"] or "--aws-sigv4" not in cmd:
                fail("the curl example is not a --aws-sigv4 upload to https://s3.example.com: %s" % cmd)
            rec = os.path.join(tmp, "rec-curl")
            record(rec, cmd, 3, {"S3_KEY": KEY, "S3_SECRET": SECRET})
            if srv.state["refused"]:
                fail("the stub refused curl's requests: %s" % srv.state["refused"][:3])
            names = check_shipped(rec, os.path.join(srv.state["dir"], "traces", host), "curl --aws-sigv4")
            if sorted(srv.state["puts"]) != sorted("/traces/%s/%s" % (host, n) for n in names):
                fail("uploads %s for segments %s" % (srv.state["puts"], names))

            # A wrong secret: every upload refused, counted, nothing marked shipped.
            srv.state["puts"].clear()
            rec = os.path.join(tmp, "rec-badkey")
            record(rec, cmd, 3, {"S3_KEY": KEY, "S3_SECRET": "wrong"})
            m = metrics(rec)
            if srv.state["puts"] or not srv.state["refused"]:
                fail("a wrong secret was accepted (%d uploads)" % len(srv.state["puts"]))
            if any(n.endswith(".shipped") for n in os.listdir(rec)):
                fail("a refused upload was marked shipped")
            if m.get("stallscope_archive_failed_total", 0) < 1 or m.get("stallscope_archive_pending", 0) < 1:
                fail("refused uploads are not counted: %s" % m)
            if "signature does not match" not in srv.state["refused"]:
                fail("refused for another reason: %s" % srv.state["refused"][:3])
        finally:
            srv.shutdown()
            srv.server_close()
    print("archive tools: rsync and curl --aws-sigv4 ship every segment once; a bad signature is refused and counted")


main()
