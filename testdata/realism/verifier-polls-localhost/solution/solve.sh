#!/bin/bash
cd /app/gateway
python3 - <<'PY'
from pathlib import Path
p = Path("server.py")
s = p.read_text()
s = s.replace("""        self.send_response(502)
        self.end_headers()""", """        import re
        m = re.fullmatch(r"/orders/(\\d+)", self.path)
        if not m:
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps({"id": int(m.group(1))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)""")
p.write_text(s)
PY
