"""A stand-in for the daemon in the orphan-race test: it starts one sandboxed child that hangs
(with two grandchildren of its own), says so on stdout, and waits; the test SIGKILLs it at a
random moment of the child's start-up. Run as
`python -m tests.support.spawner WORKDIR MARKER bubblewrap|unsafe`. Unconfined, the child
starts no grandchildren (nothing but the OS sandbox could stop one that leaves the group)."""

import sys
from pathlib import Path

from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation
from nkibench.sandbox.process import Limits, run_child


def main() -> None:
    workdir, marker = Path(sys.argv[1]), sys.argv[2]
    unsafe = sys.argv[3] == "unsafe"
    isolation = Isolation.unsafe("the test asks") if unsafe else Isolation.detect()
    print("spawning", flush=True)
    with SessionFolders(workdir, isolation.child_uid) as folders:
        run_child(
            "tests.support.sandbox_probe",
            {"probe": "hang_alone" if unsafe else "hang"},
            workdir=folders.fresh("work"),
            limits=Limits(timeout_s=600),
            isolation=isolation,
            environment={"ACCELOPT_PROBE_MARK": marker},
        )


if __name__ == "__main__":
    main()
