"""A writer for the crash test: appends 10-event batches and keeps the library projection
caught up, forever, until it is killed. Run as `python -m tests.support.crash_writer URL TAG`."""

import dataclasses
import sys

from store.projections.library import LibraryProjection
from store.projections.runner import ProjectionRunner
from store.sql import SqlEventStore
from store.synthetic import SyntheticWorkload

BATCH = 10


def main(url: str, tag: str) -> None:
    store = SqlEventStore.open(url)
    # commit_every below the batch size: kills land between partial commits of a catch-up too
    runner = ProjectionRunner(store, LibraryProjection(), commit_every=7)
    runner.catch_up()
    workload = SyntheticWorkload(seed=int(tag), tasks=12)
    print("ready", flush=True)
    number = 0
    while True:
        stream_id, batch = workload.batch(BATCH)
        marked = [dataclasses.replace(e, metadata={"batch": f"{tag}:{number}"}) for e in batch]
        store.append(stream_id, marked)
        runner.catch_up()
        number += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
