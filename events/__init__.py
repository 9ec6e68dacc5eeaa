"""The event vocabulary of accelopt: typed events, schema versions, upcasters and the codec.

Pure code: nothing here touches a database, a file or the network.
"""

from events.base import Event
from events.catalog import (
    EVENT_TYPES,
    BeamEntry,
    BeamSelected,
    CandidateGenerated,
    CandidateRejected,
    DaemonStarted,
    DaemonStopped,
    DeviceCeilingsMeasured,
    ExperienceSummarized,
    KernelDemoted,
    KernelPromoted,
    KernelRemoved,
    KernelSourceChanged,
    LLMCallCompleted,
    PlanProposed,
    PortAttempted,
    PortFinished,
    PortStarted,
    ProfileRecorded,
    SearchFinished,
    SearchStarted,
    TaskInvalid,
)
from events.codec import canonical_json, decode, encode
from events.envelope import Envelope, ExpectedVersion, NewEvent, StoredEvent
from events.errors import (
    AccelOptError,
    EventDecodeError,
    SchemaVersionTooNew,
    UnknownEventType,
)
from events.projection import Projection

__all__ = [
    "EVENT_TYPES",
    "AccelOptError",
    "BeamEntry",
    "BeamSelected",
    "CandidateGenerated",
    "CandidateRejected",
    "DaemonStarted",
    "DaemonStopped",
    "DeviceCeilingsMeasured",
    "Envelope",
    "Event",
    "EventDecodeError",
    "ExpectedVersion",
    "ExperienceSummarized",
    "KernelDemoted",
    "KernelPromoted",
    "KernelRemoved",
    "KernelSourceChanged",
    "LLMCallCompleted",
    "NewEvent",
    "PlanProposed",
    "PortAttempted",
    "PortFinished",
    "PortStarted",
    "ProfileRecorded",
    "Projection",
    "SchemaVersionTooNew",
    "SearchFinished",
    "SearchStarted",
    "StoredEvent",
    "TaskInvalid",
    "UnknownEventType",
    "canonical_json",
    "decode",
    "encode",
]
