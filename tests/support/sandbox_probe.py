"""A child for the sandbox tests, run exactly like a kernel phase (`python -I -m ...`)."""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from nkibench.sandbox.process import apply_limits


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    apply_limits(request["limits"])
    result_path = Path(request["result_path"])
    probe = request["probe"]
    if probe == "env":
        result = {"env": dict(os.environ), "cwd": os.getcwd()}
    elif probe == "limits":
        result = {
            name: resource.getrlimit(getattr(resource, name))[0]
            for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE")
        }
    elif probe == "memory":
        try:
            hoard = bytearray(request["megabytes"] * 1024 * 1024)
            result = {"allocated": len(hoard)}
        except MemoryError:
            result = {"memory_error": True}
    elif probe == "hang":
        children = [subprocess.Popen(["sleep", "600"]) for _ in range(2)]
        Path(request["pid_file"]).write_text(json.dumps([c.pid for c in children]))
        while True:
            time.sleep(1)
    else:
        raise SystemExit(f"unknown probe {probe}")
    result_path.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
