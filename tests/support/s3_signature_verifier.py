#!/usr/bin/python3
"""A proxy in front of s3rver that checks every request's AWS Signature Version 4 with botocore.

s3rver accepts any signature, so a test that wants signatures checked routes its requests through
this proxy: botocore (an implementation independent of ours) recomputes each signature from the
request as received and the secret key of its access key id. A match is forwarded to s3rver; a
mismatch gets S3's own 403 SignatureDoesNotMatch answer. GET /__verifier__/stats returns the counts
as JSON.

Usage: s3_signature_verifier.py UPSTREAM_PORT ACCESS_KEY_ID:SECRET [...]
Prints "listening on PORT" once it accepts connections.
"""

import hashlib
import http.client
import http.server
import json
import re
import sys
import threading

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


class Verifier:
    def __init__(self, secrets):
        self.secrets = secrets
        self.lock = threading.Lock()
        self.counts = {"verified": 0, "rejected": 0, "unsigned": 0}

    def count(self, outcome):
        with self.lock:
            self.counts[outcome] += 1

    def check(self, method, target, headers, body=b""):
        """None when the signature is right (or absent), else why it is wrong."""
        authorization = headers.get("Authorization")
        if authorization is None:
            self.count("unsigned")
            return None
        match = AUTHORIZATION.match(authorization)
        if not match:
            return "malformed Authorization header: " + authorization
        secret = self.secrets.get(match["key"])
        if secret is None:
            return "unknown access key id " + match["key"]
        names = match["signed"].split(";")
        if "host" not in names or "x-amz-date" not in names:
            return "host and x-amz-date must be signed, got " + match["signed"]
        request = AWSRequest(method=method, url="http://" + headers["Host"] + target)
        for name in names:
            if headers.get(name) is None:
                return "signed header %s is missing" % name
            request.headers[name] = headers[name]
        claimed = headers.get("x-amz-content-sha256")
        if claimed is None:
            return "x-amz-content-sha256 is missing"
        if body and claimed != hashlib.sha256(body).hexdigest():
            return "x-amz-content-sha256 %s is not the body's SHA-256 %s" % (
                claimed, hashlib.sha256(body).hexdigest())
        request.context["timestamp"] = headers["x-amz-date"]
        token = headers.get("x-amz-security-token")
        auth = S3SigV4Auth(Credentials(match["key"], secret, token), match["service"],
                           match["region"])
        canonical = auth.canonical_request(request)
        expected = auth.signature(auth.string_to_sign(request, canonical), request)
        if expected != match["signature"]:
            return "signature %s, botocore computes %s for:\n%s" % (
                match["signature"], expected, canonical)
        return None


def make_handler(verifier, upstream_port):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):
            sys.stderr.write(format % args + "\n")

        def do_GET(self):
            self.relay()

        def do_HEAD(self):
            self.relay()

        def do_PUT(self):
            self.relay()

        def do_POST(self):
            self.relay()

        def do_DELETE(self):
            self.relay()

        def relay(self):
            if self.path == "/__verifier__/stats":
                with verifier.lock:
                    self.answer(200, json.dumps(verifier.counts).encode(), "application/json")
                return
            sent = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            problem = verifier.check(self.command, self.path, self.headers, sent)
            if problem is not None:
                verifier.count("rejected")
                sys.stderr.write("rejected %s %s: %s\n" % (self.command, self.path, problem))
                body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
                        "SignatureDoesNotMatch</Code><Message>The request signature we calculated "
                        "does not match the signature you provided. Check your key and signing "
                        "method.</Message></Error>").encode()
                self.answer(403, body, "application/xml")
                return
            if "Authorization" in self.headers:
                verifier.count("verified")
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port)
            headers = {name: value for name, value in self.headers.items()}
            upstream.request(self.command, self.path, body=sent if sent else None,
                             headers=headers)
            response = upstream.getresponse()
            self.send_response(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in ("connection", "transfer-encoding"):
                    self.send_header(name, value)
            body = b"" if self.command == "HEAD" else response.read()
            if self.command != "HEAD" and response.getheader("Content-Length") is None:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            upstream.close()

        def answer(self, status, body, content_type):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    return Handler


def main():
    upstream_port = int(sys.argv[1])
    secrets = dict(pair.split(":", 1) for pair in sys.argv[2:])
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), make_handler(Verifier(secrets), upstream_port))
    server.daemon_threads = True
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
