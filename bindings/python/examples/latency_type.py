"""The sample type of the ping/pong example: RTI perftest's TestData_t (so a --size of N
bytes is the same sample size as `perftest -dataLen N`: 28 bytes of fixed members plus
N - 28 payload bytes)."""

from dataclasses import dataclass

import ferrodds
from ferrodds import array, bounded_bytes, int32, topic_type, uint8, uint32

OVERHEAD_BYTES = 28


@topic_type(typename="TestData_t")
@dataclass
class TestData:
    key: array[uint8, 4]
    entity_id: int32
    seq_num: uint32
    timestamp_sec: int32
    timestamp_usec: uint32
    latency_ping: int32
    bin_data: bounded_bytes[65470]


def participant(domain: int, shm: bool) -> ferrodds.DomainParticipant:
    """Loopback only: interface and discovery peer 127.0.0.1, no multicast."""
    return ferrodds.DomainParticipant(
        domain, interface="127.0.0.1", peers=["127.0.0.1"], multicast=False,
        shared_memory=shm, use_env=False,
    )


QOS = ferrodds.Qos(reliability=ferrodds.Reliability.RELIABLE, history=ferrodds.KeepAll(),
                   max_blocking_time=5.0)
