"""FerroDDS from Python: a DDS middleware speaking RTPS, with serialization and the
protocol in Rust.

    from dataclasses import dataclass
    import ferrodds
    from ferrodds import Key, int32, topic_type

    @topic_type(typename="ShapeType")
    @dataclass
    class Shape:
        color: Key[str]
        x: int32
        y: int32
        shapesize: int32

    with ferrodds.DomainParticipant(0, interface="127.0.0.1", peers=["127.0.0.1"],
                                    multicast=False) as dp:
        topic = ferrodds.Topic(dp, "Square", Shape)
        writer = ferrodds.DataWriter(dp, topic)
        reader = ferrodds.DataReader(dp, topic, qos=ferrodds.Qos(reliability=ferrodds.Reliability.RELIABLE))
        writer.write(Shape("BLUE", 1, 2, 30))
        if reader.wait(timeout=5.0):
            for s in reader.take():
                print(s.data, s.info.instance_state)
"""

from ._ferrodds import (
    AlreadyDeletedError,
    BadParameterError,
    DataReader,
    DataWriter,
    DdsError,
    DdsTimeoutError,
    DomainParticipant,
    GuardCondition,
    IllegalOperationError,
    InternalError,
    NotEnabledError,
    OutOfResourcesError,
    PreconditionNotMetError,
    Sample,
    SampleInfo,
    SerializationError,
    Topic,
    TransportError,
    UnsupportedError,
    WaitSet,
)
from .qos import Durability, KeepAll, KeepLast, Ownership, Qos, Reliability, ResourceLimits
from .types import (
    Key,
    key,
    array,
    bounded_bytes,
    bounded_str,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    sequence,
    topic_type,
    uint8,
    uint16,
    uint32,
    uint64,
)

__version__ = "0.1.0"

__all__ = [
    "DomainParticipant",
    "Topic",
    "DataWriter",
    "DataReader",
    "Sample",
    "SampleInfo",
    "WaitSet",
    "GuardCondition",
    "Qos",
    "Reliability",
    "Durability",
    "Ownership",
    "KeepLast",
    "KeepAll",
    "ResourceLimits",
    "topic_type",
    "Key",
    "key",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float32",
    "float64",
    "sequence",
    "array",
    "bounded_str",
    "bounded_bytes",
    "DdsError",
    "InternalError",
    "BadParameterError",
    "UnsupportedError",
    "OutOfResourcesError",
    "PreconditionNotMetError",
    "DdsTimeoutError",
    "AlreadyDeletedError",
    "NotEnabledError",
    "IllegalOperationError",
    "SerializationError",
    "TransportError",
]
