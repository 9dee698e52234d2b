"""An independent CA client for tests: pyepics in its own process, with the env it is given
(loopback and the IOC's ports, from Ioc.env or rtqual.epics.env.epics_env)."""
import json
import subprocess
import sys

# A CA client in its own process (loopback env and the IOC's ports from ioc.env): one JSON
# request per line on stdin, one JSON answer per line on stdout.
_CA_CLIENT = """
import json, sys
import epicscorelibs.path.pyepics
import epics
for line in sys.stdin:
    req = json.loads(line)
    try:
        if req["op"] == "get":
            v = epics.caget(req["pv"], timeout=5)
            ans = v.tolist() if hasattr(v, "tolist") else v
        else:
            ans = epics.caput(req["pv"], req["value"], wait=True, timeout=5)
    except Exception as e:
        ans = {"error": str(e)}
    print(json.dumps(ans), flush=True)
"""


class CaClient:
    def __init__(self, env):
        self.proc = subprocess.Popen([sys.executable, "-c", _CA_CLIENT], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def _ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "CA client died"
        return json.loads(line)

    def get(self, pv):
        return self._ask(op="get", pv=pv)

    def put(self, pv, value):
        assert self._ask(op="put", pv=pv, value=value) == 1, f"caput {pv} failed"

    def close(self):
        self.proc.kill()
        self.proc.wait()
