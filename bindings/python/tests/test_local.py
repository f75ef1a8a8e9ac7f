"""Write/read within one process on loopback: matching, reliable delivery, keyed
instances, listeners, wrong arguments and use after close."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import List

import pytest

import ferrodds
from conftest import RELIABLE, Shape, TestDataKeyed, loopback, payload_for
from ferrodds import (
    Key,
    float64,
    int32,
    int64,
    sequence,
    topic_type,
    uint8,
    uint32,
)


@topic_type
@dataclass
class Everything:
    """One member of every supported kind."""

    id: Key[uint32]
    flag: bool
    small: int32
    big: int64
    ratio: float64
    name: str
    blob: bytes
    values: sequence[int32]
    names: List[str]
    octets: ferrodds.array[uint8, 3]


def eventually(cond, timeout: float = 10.0) -> bool:
    """Polls `cond` until it holds (a listener's effects land on its own thread)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def take_until(reader: ferrodds.DataReader, n: int, timeout: float = 10.0) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        reader.wait(timeout=max(0.0, deadline - time.monotonic()))
        got.extend(reader.take())
    return got


def test_write_read_every_kind_round_trips():
    with loopback(211) as dp:
        topic = ferrodds.Topic(dp, "py_every", Everything)
        assert topic.keyed and topic.type_name == "Everything"
        w = ferrodds.DataWriter(dp, topic, qos=RELIABLE)
        r = ferrodds.DataReader(dp, topic, qos=RELIABLE)
        assert w.wait_for_matched(1, timeout=10) and r.wait_for_matched(1, timeout=10)
        sent = Everything(
            id=7, flag=True, small=-5, big=-(2**40), ratio=2.5, name="héllo", blob=b"\x00\x01\xff",
            values=[1, -2, 3], names=["a", "", "ccc"], octets=[9, 8, 7],
        )
        w.write(sent)
        got = take_until(r, 1)
        assert len(got) == 1
        s = got[0]
        assert s.info.valid_data and s.info.instance_state == "alive"
        assert s.data == sent
        assert isinstance(s.data, Everything)
        assert s.info.instance_handle == w.lookup_instance(sent)
        assert s.info.source_timestamp is not None and abs(s.info.source_timestamp - time.time()) < 60
        assert r.take() == [] and r.wait(timeout=0.05) is False


def test_reliable_delivery_of_n_samples_in_order():
    n = 3000
    with loopback(212) as dp:
        topic = ferrodds.Topic(dp, "py_reliable", TestDataKeyed)
        w = ferrodds.DataWriter(dp, topic, qos=ferrodds.Qos(
            reliability=ferrodds.Reliability.RELIABLE, history=ferrodds.KeepAll(),
            max_blocking_time=5.0))
        r = ferrodds.DataReader(dp, topic, qos=RELIABLE)
        assert w.wait_for_matched(1, timeout=10) and r.wait_for_matched(1, timeout=10)
        for i in range(n):
            w.write(TestDataKeyed([1, 0, 0, 0], 7, i, 0, 0, -1, payload_for(i)))
        w.wait_for_acknowledgments(timeout=20)
        got = take_until(r, n, timeout=20)
        seqs = [s.data.seq_num for s in got]
        assert seqs == list(range(n))
        assert all(s.data.bin_data == payload_for(s.data.seq_num) for s in got)


def test_keyed_instances_register_dispose_and_keep_last_per_instance():
    with loopback(217) as dp:
        topic = ferrodds.Topic(dp, "py_keyed", Shape)
        w = ferrodds.DataWriter(dp, topic, qos=RELIABLE)
        qos = ferrodds.Qos(reliability=ferrodds.Reliability.RELIABLE, history=ferrodds.KeepLast(1))
        r = ferrodds.DataReader(dp, topic, qos=qos)
        assert w.wait_for_matched(1, timeout=10) and r.wait_for_matched(1, timeout=10)
        handles = {c: w.register_instance(Shape(c, 0, 0, 0)) for c in ("RED", "GREEN", "BLUE")}
        assert len(set(handles.values())) == 3 and all(len(h) == 16 for h in handles.values())
        for i in range(5):
            for c in handles:
                w.write(Shape(c, i, i, 30))
        w.wait_for_acknowledgments(timeout=10)
        time.sleep(0.1)
        got = r.take()
        # KEEP_LAST 1 per instance: the last sample of each color.
        assert sorted((s.data.color, s.data.x) for s in got) == [("BLUE", 4), ("GREEN", 4), ("RED", 4)]
        assert {s.data.color: s.info.instance_handle for s in got} == handles
        w.dispose(Shape("GREEN", 0, 0, 0))
        got = take_until(r, 1)
        assert len(got) == 1 and not got[0].info.valid_data and got[0].data is None
        assert got[0].info.instance_state == "not_alive_disposed"
        assert got[0].info.instance_handle == handles["GREEN"]
        with pytest.raises(ferrodds.PreconditionNotMetError):
            w.unregister_instance(Shape("never-registered", 0, 0, 0))


def test_listener_runs_on_its_own_thread_and_survives_exceptions(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u))
    with loopback(218) as dp:
        topic = ferrodds.Topic(dp, "py_listener", Shape)
        got: list = []
        threads = set()
        matched: list = []
        done = threading.Event()

        class Listener:
            def on_data_available(self, reader):
                threads.add(threading.get_ident())
                batch = [s.data.x for s in reader.take()]
                got.extend(batch)
                if 3 in got:
                    done.set()
                if 1 in batch:
                    raise RuntimeError("listener bug")

            def on_subscription_matched(self, reader, current_count):
                matched.append(current_count)

        r = ferrodds.DataReader(dp, topic, qos=RELIABLE, listener=Listener())
        w = ferrodds.DataWriter(dp, topic, qos=RELIABLE)
        assert w.wait_for_matched(1, timeout=10)
        for x in (1, 2, 3):
            w.write(Shape("RED", x, 0, 0))
            w.wait_for_acknowledgments(timeout=10)
            time.sleep(0.05)
        assert done.wait(timeout=10), f"listener got {got}"
        assert got == [1, 2, 3]
        assert eventually(lambda: r.listener_errors == 1)
        assert len(unraisable) == 1 and isinstance(unraisable[0].exc_value, RuntimeError)
        assert threading.get_ident() not in threads
        assert matched and matched[0] == 1
        # The participant keeps working after the exception: a plain-callable listener.
        calls = threading.Event()
        r.set_listener(lambda reader: calls.set())
        w.write(Shape("RED", 4, 0, 0))
        assert calls.wait(timeout=10)
        r.set_listener(None)
        r.close()


def test_wrong_arguments_raise_clear_errors():
    with loopback(218) as dp:
        topic = ferrodds.Topic(dp, "py_bad_args", Shape)
        w = ferrodds.DataWriter(dp, topic)
        with pytest.raises(TypeError, match="carries Shape samples, got str"):
            w.write("not a shape")
        with pytest.raises(TypeError, match="field 'x'"):
            w.write(Shape("RED", "one", 0, 0))
        with pytest.raises(OverflowError, match="field 'y'"):
            w.write(Shape("RED", 1, 2**31, 0))
        with pytest.raises(ValueError, match="field 'color'.*bound"):
            w.write(Shape("R" * 129, 1, 2, 3))
        with pytest.raises(ValueError, match="field 'color'.*NUL"):
            w.write(Shape("R\0D", 1, 2, 3))
        with pytest.raises(TypeError, match="not a topic type"):
            ferrodds.Topic(dp, "py_bad_args2", dict)
        with pytest.raises(ferrodds.PreconditionNotMetError):
            ferrodds.Topic(dp, "py_bad_args", TestDataKeyed)
        with pytest.raises(ferrodds.BadParameterError):
            ferrodds.Topic(dp, "", Shape)
        with pytest.raises(TypeError, match="ferrodds.Qos"):
            ferrodds.DataWriter(dp, topic, qos={"reliability": "reliable"})
        with pytest.raises(TypeError, match="Qos.reliability"):
            ferrodds.DataWriter(dp, topic, qos=ferrodds.Qos(reliability="reliable"))
        with pytest.raises(ValueError, match="depth"):
            ferrodds.DataReader(dp, topic, qos=ferrodds.Qos(history=ferrodds.KeepLast(0)))
        with pytest.raises(ValueError, match="timeout"):
            ferrodds.DataReader(dp, topic).wait(timeout=-1)
        with pytest.raises(TypeError):
            ferrodds.DataReader(dp, "py_bad_args")
        with pytest.raises(TypeError, match="listener"):
            ferrodds.DataReader(dp, topic, listener=42)
        with pytest.raises(TypeError, match="no CDR mapping"):
            @topic_type
            @dataclass
            class Bad:
                x: complex
        with pytest.raises(ValueError, match="keys"):
            @topic_type(keys=["nope"])
            @dataclass
            class Bad2:
                x: int32
        # the writer still works after all that
        w.write(Shape("RED", 1, 2, 3))
    with pytest.raises(ferrodds.BadParameterError, match="peer"):
        ferrodds.DomainParticipant(218, peers=["localhost:7400"], use_env=False)
    with pytest.raises(ferrodds.BadParameterError, match="domain_id"):
        ferrodds.DomainParticipant(500)
    with pytest.raises(OverflowError):
        ferrodds.DomainParticipant(-1)


def test_use_after_close_raises_already_deleted():
    dp = loopback(218)
    topic = ferrodds.Topic(dp, "py_closed", Shape)
    with ferrodds.DataWriter(dp, topic) as w:
        w.write(Shape("RED", 1, 2, 3))
    assert w.closed
    with pytest.raises(ferrodds.AlreadyDeletedError):
        w.write(Shape("RED", 1, 2, 3))
    with pytest.raises(ferrodds.DdsError):  # the hierarchy's base catches it too
        w.wait_for_matched(1, timeout=0.1)
    r = ferrodds.DataReader(dp, topic, listener=lambda reader: None)
    w2 = ferrodds.DataWriter(dp, topic)
    dp.close()
    dp.close()  # idempotent
    assert dp.closed
    for op in (r.take, lambda: r.wait(0.1), lambda: w2.write(Shape("RED", 1, 2, 3))):
        with pytest.raises(ferrodds.AlreadyDeletedError):
            op()
    with pytest.raises(ferrodds.AlreadyDeletedError):
        ferrodds.Topic(dp, "py_closed2", Shape)
    r.close()
    with pytest.raises(ferrodds.AlreadyDeletedError):
        r.take()


def test_undecodable_samples_are_dropped_and_counted():
    """Another participant's type of the same name with other members: its samples do not
    decode as ours; they are dropped and counted, and the reader goes on."""

    @topic_type(typename="Mismatch")
    @dataclass
    class Theirs:
        n: uint32

    @topic_type(typename="Mismatch")
    @dataclass
    class Ours:
        text: str

    with loopback(217) as a, loopback(217) as b:
        w = ferrodds.DataWriter(a, ferrodds.Topic(a, "py_mismatch", Theirs), qos=RELIABLE)
        w_ok = ferrodds.DataWriter(b, ferrodds.Topic(b, "py_mismatch", Ours), qos=RELIABLE)
        r = ferrodds.DataReader(b, ferrodds.Topic(b, "py_mismatch", Ours), qos=RELIABLE)
        assert w.wait_for_matched(1, timeout=20) and r.wait_for_matched(2, timeout=20), (
            f"matched: theirs {w.matched_count}, ours {w_ok.matched_count}, reader {r.matched_count}"
        )
        w.write(Theirs(1000))  # read as a string of 1000 bytes in a 4-byte body
        w.wait_for_acknowledgments(timeout=10)
        w_ok.write(Ours("fine"))
        w_ok.wait_for_acknowledgments(timeout=10)
        got = take_until(r, 1)
        assert [s.data for s in got] == [Ours("fine")]
        assert r.undecodable_count == 1


def test_writer_listener_and_topic_of_another_participant(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u))
    with loopback(217) as a, loopback(217) as b:
        counts: list = []
        seen = threading.Event()

        class WriterListener:
            def on_publication_matched(self, writer, current_count):
                counts.append(current_count)
                if current_count == 0:
                    seen.set()
                raise ValueError("listener bug")  # reported, counted, harmless

        ta = ferrodds.Topic(a, "py_wlistener", Shape)
        w = ferrodds.DataWriter(a, ta, qos=RELIABLE, listener=WriterListener())
        r = ferrodds.DataReader(b, ferrodds.Topic(b, "py_wlistener", Shape), qos=RELIABLE)
        assert w.wait_for_matched(1, timeout=10)
        r.close()  # unmatched: current_count back to 0
        assert seen.wait(timeout=10), f"counts {counts}"
        assert counts[0] == 1 and counts[-1] == 0
        assert eventually(lambda: w.listener_errors == len(counts) == len(unraisable))
        with pytest.raises(TypeError, match="on_publication_matched"):
            w.set_listener(lambda *a: None)
        with pytest.raises(ferrodds.BadParameterError, match="another participant"):
            ferrodds.DataWriter(b, ta)
        with pytest.raises(ferrodds.BadParameterError, match="another participant"):
            ferrodds.DataReader(b, ta)
        w.write(Shape("RED", 1, 2, 3))  # still fine


def test_waitset_wakes_for_the_reader_with_data_and_for_a_guard():
    with loopback(217) as dp:
        t1 = ferrodds.Topic(dp, "py_ws_1", Shape)
        t2 = ferrodds.Topic(dp, "py_ws_2", Shape)
        r1 = ferrodds.DataReader(dp, t1, qos=RELIABLE)
        r2 = ferrodds.DataReader(dp, t2, qos=RELIABLE)
        w2 = ferrodds.DataWriter(dp, t2, qos=RELIABLE)
        guard = ferrodds.GuardCondition()
        ws = ferrodds.WaitSet()
        for obj in (r1, r2, guard, r2):
            ws.attach(obj)
        with pytest.raises(ferrodds.DdsTimeoutError):
            ws.wait(timeout=0.05)
        assert w2.wait_for_matched(1, timeout=10)
        w2.write(Shape("RED", 1, 2, 3))
        assert ws.wait(timeout=10) == [r2]
        assert [s.data.x for s in r2.take()] == [1]
        threading.Timer(0.05, guard.set_trigger_value, (True,)).start()
        assert ws.wait(timeout=10) == [guard]
        guard.set_trigger_value(False)
        ws.detach(guard)
        with pytest.raises(ferrodds.BadParameterError, match="not attached"):
            ws.detach(guard)
        with pytest.raises(TypeError, match="DataReader or GuardCondition"):
            ws.attach(w2)
        r1.close()
        ws2 = ferrodds.WaitSet()
        with pytest.raises(ferrodds.AlreadyDeletedError):
            ws2.attach(r1)


def test_topic_type_records_the_cdr_description():
    from typing import Annotated

    @topic_type(typename="m::Desc", keys=["b"])
    class Desc:  # not a dataclass yet: the decorator makes it one
        a: Annotated[int32, ferrodds.key]
        b: ferrodds.bounded_str[8]
        c: int
        d: float
        e: List[ferrodds.float32]
        f: sequence[ferrodds.int16, 3]
        g: ferrodds.bounded_bytes[2]

    assert Desc.__ferrodds_type__ == (
        "m::Desc",
        "final",
        (
            ("a", ("int32",), True),
            ("b", ("str", 8), True),
            ("c", ("int64",), False),
            ("d", ("float64",), False),
            ("e", ("seq", ("float32",), None), False),
            ("f", ("seq", ("int16",), 3), False),
            ("g", ("bytes", 2), False),
        ),
    )
    d = Desc(1, "k", 2, 0.5, [1.5], [1, 2, 3], b"xy")  # a dataclass now
    with loopback(217) as dp:
        t = ferrodds.Topic(dp, "py_desc", Desc)
        assert t.keyed and t.type_name == "m::Desc"
        with ferrodds.DataWriter(dp, t, qos=RELIABLE) as w, ferrodds.DataReader(dp, t, qos=RELIABLE) as r:
            assert w.wait_for_matched(1, timeout=10)
            w.write(d)
            assert [s.data for s in take_until(r, 1)] == [d]
            with pytest.raises(ValueError, match="field 'f'.*bound"):
                w.write(Desc(1, "k", 2, 0.5, [], [1, 2, 3, 4], b""))
            with pytest.raises(ValueError, match="field 'g'.*bound"):
                w.write(Desc(1, "k", 2, 0.5, [], [], b"xyz"))
