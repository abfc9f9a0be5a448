#!/usr/bin/env python3
"""The forge a Job talks to, played on 127.0.0.1 for deploy/try-image.sh.

Serves the bare repositories under ROOT over smart HTTP through the real `git http-backend`,
behind the token (HTTP Basic: any user name, the token as password, as GitHub, GitLab and Gitea
take `x-access-token`'s), and Gitea's REST API for pull requests: `POST
/api/v1/repos/OWNER/REPO/pulls` opens one (201 with `number` and `html_url`) and `POST
.../issues/N/comments` adds a comment. Every API call is appended to LOG as one JSON line
(method, path, whether the token came, the body), so the script checks what the forge received.

    peers.py ROOT TOKEN LOG     prints http://127.0.0.1:PORT, then serves until stopped
"""

import base64
import http.server
import json
import os
import re
import subprocess
import sys

ROOT, TOKEN, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
PULLS = re.compile(r"^/api/v1/repos/([^/]+)/([^/]+)/pulls$")
COMMENTS = re.compile(r"^/api/v1/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$")


class Forge(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):
        pass

    def authorised(self):
        """The token as a Basic password, or as Gitea's `token` header."""
        got = self.headers.get("Authorization", "")
        if got.startswith("token ") or got.startswith("Bearer "):
            return got.split(" ", 1)[1] == TOKEN
        if got.startswith("Basic "):
            try:
                pair = base64.b64decode(got[6:]).decode()
            except ValueError:
                return False
            return pair.partition(":")[2] == TOKEN
        return False

    def answer(self, status, body, kind="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="forge"')
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        # git sends a push's pack chunked (no Content-Length), as HTTP/1.1 allows.
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def dispatch(self, method):
        path = self.path.split("?", 1)[0]
        if path.startswith("/api/"):
            return self.api(method, path)
        if not self.authorised():
            return self.answer(401, b"a token is needed\n", "text/plain")
        return self.git(method)

    def api(self, method, path):
        raw = self.body()
        try:
            sent = json.loads(raw) if raw else None
        except ValueError:
            sent = raw.decode("utf-8", "replace")
        with open(LOG, "a", encoding="utf-8") as log:
            record = {"method": method, "path": path, "token": self.authorised(), "body": sent}
            log.write(json.dumps(record) + "\n")
        if not self.authorised():
            return self.answer(401, {"message": "token is required"})
        web = "http://%s" % self.headers.get("Host", "127.0.0.1")
        pulls = PULLS.match(path)
        if method == "POST" and pulls:
            owner, repo = pulls.groups()
            page = "%s/%s/%s/pulls/1" % (web, owner, repo)
            return self.answer(201, {"number": 1, "html_url": page})
        if method == "POST" and COMMENTS.match(path):
            return self.answer(201, {"id": 1})
        return self.answer(404, {"message": "not found"})

    def git(self, method):
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": ROOT,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "harrow",
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        data = self.body()
        env["CONTENT_LENGTH"] = str(len(data))
        out = subprocess.run(
            ["git", "http-backend"], input=data, env=env, capture_output=True, check=False
        ).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forge)
print("http://127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
