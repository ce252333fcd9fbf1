"""oslo.middleware's healthcheck, served on 127.0.0.1 for health's differential test.

Usage: oslo_healthcheck.py STATE_JSON DETAILED(0|1) [DISABLE_BY_FILE_PATH]

STATE_JSON holds a list of backend states, [{"available": true, "reason": "OK", "details": ""}, ...],
read at each request. With DISABLE_BY_FILE_PATH, oslo's own disable_by_file backend comes first.
The server prints "port N" once it listens.
"""
import json
import sys
import wsgiref.simple_server

from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase


class StateBackend(pluginbase.HealthcheckBaseExtension):
    def __init__(self, path, index):
        self.path = path
        self.index = index

    def healthcheck(self, server_port):
        with open(self.path) as f:
            st = json.load(f)[self.index]
        return pluginbase.HealthcheckResult(available=st["available"], reason=st["reason"],
                                            details=st.get("details"))


class Extension:
    def __init__(self, obj):
        self.obj = obj


class Quiet(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    state, detailed = sys.argv[1], sys.argv[2] == "1"
    disable = sys.argv[3] if len(sys.argv) > 3 else ""
    conf = {"detailed": detailed}
    if disable:
        conf["backends"] = ["disable_by_file"]
        conf["disable_by_file_path"] = disable
    app = healthcheck.Healthcheck.app_factory({}, **conf)
    with open(state) as f:
        n = len(json.load(f))
    app._backends = list(app._backends) + [Extension(StateBackend(state, i)) for i in range(n)]
    srv = wsgiref.simple_server.make_server("127.0.0.1", 0, app, handler_class=Quiet)
    print("port", srv.server_port, flush=True)
    srv.serve_forever()


main()
