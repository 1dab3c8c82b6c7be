"""A stand-in for a local model server (llama-server, vLLM): it takes a few
seconds to load before it listens, then answers /health and an
OpenAI-style /v1/models. Standard library only."""
import http.server
import json
import os
import sys
import time

port = int(sys.argv[1])
time.sleep(float(os.environ.get("LOAD_SECONDS", "3")))  # "loading the weights"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            body = {"status": "ok"}
        elif self.path == "/v1/models":
            body = {"object": "list", "data": [{"id": "stand-in", "object": "model"}]}
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        print(fmt % args, flush=True)


print(f"model loaded, serving on {port}", flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
