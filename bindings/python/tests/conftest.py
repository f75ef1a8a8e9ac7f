"""Shared helpers of the pytest suite. Every participant is pinned to loopback
(127.0.0.1, unicast discovery to 127.0.0.1, multicast off), and every test bounds its time.

Domains 211, 212 and 217-219 are this suite's (no Rust test uses them)."""

from __future__ import annotations

import os
import pathlib
import sys
from dataclasses import dataclass

import pytest

import ferrodds
from ferrodds import Key, array, bounded_bytes, bounded_str, int32, topic_type, uint32

REPO = pathlib.Path(__file__).resolve().parents[3]
HERE = pathlib.Path(__file__).resolve().parent


def loopback(domain: int) -> ferrodds.DomainParticipant:
    """A participant that stays on loopback whatever the environment says."""
    return ferrodds.DomainParticipant(
        domain, interface="127.0.0.1", peers=["127.0.0.1"], multicast=False, use_env=False
    )


def skip_or_fail(reason: str) -> None:
    """The repository's skip rule (crates/testkit): record the skip in FERRODDS_SKIP_LOG;
    under CI=true a skip fails the test unless FERRODDS_ALLOW_SKIP=1."""
    log = os.environ.get("FERRODDS_SKIP_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"python: {reason}\n")
    if os.environ.get("CI") == "true" and os.environ.get("FERRODDS_ALLOW_SKIP") != "1":
        pytest.fail(f"{reason} (skipping is not allowed under CI=true)")
    pytest.skip(reason)


RELIABLE = ferrodds.Qos(reliability=ferrodds.Reliability.RELIABLE, history=ferrodds.KeepAll())


@topic_type(typename="ShapeType", extensibility="appendable")
@dataclass
class Shape:
    """The OMG interoperability demo's ShapeType (as interop/cyclone/peer.py declares it)."""

    color: Key[bounded_str[128]]
    x: int32
    y: int32
    shapesize: int32


@topic_type(typename="TestDataKeyed_t")
@dataclass
class TestDataKeyed:
    """The perftest keyed type (as interop/cyclone/peer.py declares it)."""

    __test__ = False  # not a pytest test class

    key: Key[array[ferrodds.uint8, 4]]
    entity_id: int32
    seq_num: uint32
    timestamp_sec: int32
    timestamp_usec: uint32
    latency_ping: int32
    bin_data: bounded_bytes[65470]


def payload_for(seq: int) -> bytes:
    """interop/cyclone/peer.py's payload: length seq % 64, bytes (seq + i) % 256."""
    return bytes((seq + i) % 256 for i in range(seq % 64))


@pytest.fixture
def python_exe() -> str:
    return sys.executable
