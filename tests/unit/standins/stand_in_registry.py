# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""STAND-IN registry servers for what a real registry cannot be made to do on purpose. These are NOT registries.

The enroot that talks to them is NVIDIA's real enroot 4.1.2 (tests/unit/realenroot.py); only the server side
misbehaves here:

* :class:`HangingBlobProxy` forwards every request to a real docker-registry, but a blob larger than
  ``hang_over`` bytes is sent only half: the status, the headers with the full Content-Length and the first half of
  the body, then nothing until the proxy is stopped (a registry or a proxy that stalls mid-download);
* :class:`SilentServer` accepts TCP connections (the kernel's listen backlog) and never answers a byte (a token
  server that hangs);
* :class:`UnavailableServer` answers every request 503 and counts them (how often enroot's curl retried).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import http.client
import http.server
import socket
import threading

# Hop-by-hop headers a proxy does not forward (RFC 7230 6.1).
_HOP = frozenset(('connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
                  'transfer-encoding', 'upgrade', 'host'))


class HangingBlobProxy(object):
    """A STAND-IN: a plain-HTTP proxy on 127.0.0.1 in front of the real registry ``upstream`` (host:port)."""

    def __init__(self, upstream, hang_over=65536):
        self.upstream = upstream
        self.hang_over = hang_over
        self.hanging = threading.Event()   # set once a blob was cut in the middle
        self.release = threading.Event()   # set by stop(): the stalled answers end
        self.hung = []                     # (path, bytes sent, Content-Length) of each cut blob
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                proxy.forward(self, body=False)

            def do_GET(self):
                proxy.forward(self, body=True)

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.host = '127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def forward(self, handler, body):
        conn = http.client.HTTPConnection(self.upstream, timeout=30)
        headers = dict((k, v) for k, v in handler.headers.items() if k.lower() not in _HOP)
        conn.request(handler.command, handler.path, headers=headers)
        response = conn.getresponse()
        data = response.read() if body else b''
        handler.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in _HOP:
                handler.send_header(key, value)
        handler.send_header('Connection', 'close')
        handler.end_headers()
        conn.close()
        if not body:
            return
        if '/blobs/' in handler.path and response.status == 200 and len(data) > self.hang_over:
            half = len(data) // 2
            handler.wfile.write(data[:half])
            handler.wfile.flush()
            self.hung.append((handler.path, half, len(data)))
            self.hanging.set()
            self.release.wait()
            handler.close_connection = True
            return
        handler.wfile.write(data)

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class SilentServer(object):
    """A STAND-IN: a TCP port on 127.0.0.1 that takes connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(64)
        self.host = '127.0.0.1:%d' % self.sock.getsockname()[1]

    def stop(self):
        self.sock.close()


class UnavailableServer(object):
    """A STAND-IN: an HTTP server on 127.0.0.1 that answers every request 503 Service Unavailable (a registry behind a
    load balancer with no healthy backend) and counts the requests, so a test can see how often a client retried."""

    def __init__(self):
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                server.requests.append(self.path)
                self.send_response(503, 'Service Unavailable')
                self.send_header('Content-Length', '0')
                self.send_header('Connection', 'close')
                self.end_headers()

            do_HEAD = do_GET

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.host = '127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
