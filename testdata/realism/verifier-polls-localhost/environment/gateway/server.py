import json
from http.server import BaseHTTPRequestHandler, HTTPServer

UPSTREAM = {"orders": "/data/orders.json"}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            self.send_response(200)
            self.end_headers()
            return
        self.send_response(502)
        self.end_headers()


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", 7070), Handler).serve_forever()
