"""The job queue: profiling work waiting for a device.

The port (`store.jobs.base`) is cut at what a queue such as procrastinate offers: submit a
job, wait for its result, serve a device. Adapters: `store.jobs.memory` (in process, for tests
and tools) and `store.jobs.sql` (a table in the event database, one host). Import an adapter
from its own module where the queue is built; everything else depends on the port only.
"""

from store.jobs.base import Handler, Job, JobCancelled, JobQueue, JobState

__all__ = ["Handler", "Job", "JobCancelled", "JobQueue", "JobState"]
