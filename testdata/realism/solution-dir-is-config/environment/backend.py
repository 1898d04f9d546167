from http.server import BaseHTTPRequestHandler, HTTPServer
