"""A stand-in for the daemon in the orphan-race test: it starts one sandboxed child that hangs
(with two grandchildren of its own), says so on stdout, and waits; the test SIGKILLs it at a
random moment of the child's start-up. Run as
`python -m tests.support.spawner WORKDIR MARKER bubblewrap|unsafe|warm`. Unconfined, the child
starts no grandchildren (nothing but the OS sandbox could stop one that leaves the group);
warm, a zygote forks the child (nkibench.sandbox.warm), and the zygote carries the marker too."""

import sys
from pathlib import Path

from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import Limits, run_child
from nkibench.sandbox.warm import WarmPool


def main() -> None:
    workdir, marker = Path(sys.argv[1]), sys.argv[2]
    unsafe = sys.argv[3] == "unsafe"
    isolation = Isolation.unsafe("the test asks") if unsafe else Isolation.detect()
    marked = {"ACCELOPT_PROBE_MARK": marker}
    warm = None
    if sys.argv[3] == "warm":
        warm = WarmPool(isolation, Mounts(), marked, ("tests.support.sandbox_probe",))
        workdir = warm.root
    print("spawning", flush=True)
    with SessionFolders(workdir, isolation.child_uid, passable=warm is not None) as folders:
        run_child(
            "tests.support.sandbox_probe",
            {"probe": "hang_alone" if unsafe else "hang"},
            workdir=folders.fresh("work"),
            limits=Limits(timeout_s=600),
            isolation=isolation,
            environment=marked,
            warm=warm,
        )


if __name__ == "__main__":
    main()
