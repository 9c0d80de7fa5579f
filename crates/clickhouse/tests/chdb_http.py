#!/usr/bin/env python3
"""A small ClickHouse HTTP front over chdb (the ClickHouse engine in-process),
for the tests of crates/clickhouse only.

It speaks the subset of ClickHouse's HTTP interface the backend uses:
POST (or GET) / with the query in the body or in the `query` parameter (then
the body is the data that follows it, as for `INSERT ... FORMAT ...`), the
`database` and `default_format` parameters, every other parameter a setting,
`X-ClickHouse-User`/`X-ClickHouse-Key` ignored, and exceptions answered with
their `Code: N. DB::Exception: ...` text, a non-200 status and the
`X-ClickHouse-Exception-Code` header. GET /ping answers `Ok.`.

Usage: chdb_http.py --path DIR [--port 0] [--cluster NAME]
With --cluster, chdb reads a configuration defining the cluster NAME as one
shard whose one replica is this process itself (local, so queries and
inserts through a Distributed table run in-process; there is no Keeper, so
no ON CLUSTER DDL and no Replicated tables).
Prints `listening PORT` once bound; exits when its standard input closes
(so it never outlives the test process that started it).
"""
import argparse
import http.server
import os
import re
import sys
import threading
import urllib.parse

from chdb import session

NOT_SETTINGS = {"query", "database", "default_format", "query_id", "user", "password"}
SETTING_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CODE = re.compile(r"Code: (\d+)\.")
# ClickHouse's status for some codes (the rest are 500).
STATUS = {46: 400, 47: 400, 62: 400, 115: 400, 60: 404, 81: 404, 159: 500}


def quote(v):
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


class Front(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sess = None
    lock = threading.Lock()
    # The session's current database and the settings it has been SET to
    # (name -> value, None when a SET failed); guarded by `lock`.
    db = None
    applied = {}

    def log_message(self, *args):
        pass

    def answer(self, status, body, code=None):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        if code is not None:
            self.send_header("X-ClickHouse-Exception-Code", str(code))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/ping"):
            return self.answer(200, b"Ok.\n")
        self.run()

    def do_POST(self):
        self.run()

    def run(self):
        url = urllib.parse.urlsplit(self.path)
        params = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8") if length else ""
        p = dict(params)
        if "query" in p:
            query = p["query"] + ("\n" + body if body else "")
        else:
            query = body
        settings = [(k, v) for k, v in params if k not in NOT_SETTINGS]
        for k, _ in settings:
            if not SETTING_NAME.match(k):
                msg = "Code: 115. DB::Exception: Unknown setting '%s'. (UNKNOWN_SETTING)\n" % k
                return self.answer(400, msg.encode(), 115)
        fmt = p.get("default_format") or "TabSeparated"
        with Front.lock:
            s = Front.sess
            try:
                # The session keeps its database and settings between
                # requests: only what differs from the last request is sent
                # (each statement is a round through the engine).
                db = p.get("database", "default")
                if db != Front.db:
                    s.query("USE " + "`" + db.replace("`", "\\`") + "`")
                    Front.db = db
                wanted = dict(settings)
                for k in [k for k in Front.applied if k not in wanted]:
                    s.query("SET %s = DEFAULT" % k)
                    del Front.applied[k]
                for k, v in wanted.items():
                    if Front.applied.get(k) != v:
                        # Unknown until the SET succeeds: reset if not wanted.
                        Front.applied[k] = None
                        s.query("SET %s = %s" % (k, quote(v)))
                        Front.applied[k] = v
                out = s.query(query, fmt).bytes()
            except Exception as e:  # chdb raises its ChdbError with ClickHouse's text
                text = str(e).strip() + "\n"
                m = CODE.search(text)
                code = int(m.group(1)) if m else 1001
                return self.answer(STATUS.get(code, 500), text.encode(), code)
        self.answer(200, out)


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that went away before its answer (the kill tests SIGKILL
        # Rúnakefli mid-insert) is not the front's error; others are printed.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--cluster")
    a = ap.parse_args()
    path = a.path
    if a.cluster:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", a.cluster):
            sys.exit("bad cluster name %r" % a.cluster)
        os.makedirs(a.path, exist_ok=True)
        config = os.path.join(a.path, "cluster.xml")
        # tcp_port: a shard at localhost on this port is this process
        # (is_local), though nothing listens on it.
        with open(config, "w") as f:
            f.write(
                "<clickhouse><tcp_port>9000</tcp_port><remote_servers><%s><shard><replica>"
                "<host>localhost</host><port>9000</port></replica></shard></%s>"
                "</remote_servers></clickhouse>\n" % (a.cluster, a.cluster)
            )
        path = "%s?config-file=%s" % (a.path, config)
    Front.sess = session.Session(path)
    # A thread per connection (clients keep connections alive and may hold
    # several); Front.lock still runs one query at a time.
    srv = Server(("127.0.0.1", a.port), Front)
    srv.daemon_threads = True
    print("listening", srv.server_address[1], flush=True)

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
