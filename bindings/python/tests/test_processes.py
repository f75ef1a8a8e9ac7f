"""Two processes on loopback, and interoperability with Cyclone DDS's own Python package
(`cyclonedds`, run as interop/cyclone/peer.py in its own process)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import ferrodds
from conftest import HERE, RELIABLE, REPO, Shape, TestDataKeyed, loopback, payload_for, skip_or_fail


def spawn(args, env=None) -> subprocess.Popen:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(HERE) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)


def finish(p: subprocess.Popen, timeout: float = 40) -> str:
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"peer timed out: {out}\n{err}")
    assert p.returncode == 0, f"peer exited {p.returncode}:\n{out}\n{err}"
    return out


def test_two_processes_both_directions():
    n = 500
    # this process writes, the other reads
    sub = spawn([sys.executable, str(HERE / "proc_peer.py"), "sub", "212", "py_procs_a", str(n)])
    with loopback(212) as dp:
        topic = ferrodds.Topic(dp, "py_procs_a", TestDataKeyed)
        w = ferrodds.DataWriter(dp, topic, qos=ferrodds.Qos(
            reliability=ferrodds.Reliability.RELIABLE, history=ferrodds.KeepAll(),
            max_blocking_time=5.0))
        assert w.wait_for_matched(1, timeout=20), "no match with the other process"
        for i in range(n):
            w.write(TestDataKeyed([3, 0, 0, 0], 7, i, 0, 0, -1, payload_for(i)))
        w.wait_for_acknowledgments(timeout=20)
        assert f"GOT {n}" in finish(sub)
    # the other process writes, this one reads
    pub = spawn([sys.executable, str(HERE / "proc_peer.py"), "pub", "212", "py_procs_b", str(n)])
    with loopback(212) as dp:
        topic = ferrodds.Topic(dp, "py_procs_b", TestDataKeyed)
        r = ferrodds.DataReader(dp, topic, qos=RELIABLE)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            r.wait(timeout=0.5)
            got.extend(s.data.seq_num for s in r.take())
        assert got == list(range(n))
        assert "DONE" in finish(pub)


def cyclone() -> str:
    """The interpreter that has `cyclonedds` (this one, or target/peers-venv's)."""
    if os.environ.get("FERRODDS_SKIP_INTEROP") == "1":
        skip_or_fail("FERRODDS_SKIP_INTEROP=1 set, Cyclone DDS interop not run")
    for py in (sys.executable, str(REPO / "target/peers-venv/bin/python")):
        if os.path.exists(py) and subprocess.run(
            [py, "-c", "import cyclonedds"], capture_output=True
        ).returncode == 0:
            return py
    skip_or_fail("cyclonedds (PyPI) not installed: run scripts/setup-python-peers.sh")
    raise AssertionError("unreachable")


def cyclone_peer(py: str, *args: str) -> subprocess.Popen:
    uri = "file://" + str(REPO / "interop/cyclone/cyclone-loopback.xml")
    return spawn([py, str(REPO / "interop/cyclone/peer.py"), *args], env={"CYCLONEDDS_URI": uri})


@pytest.mark.parametrize("xcdr2", [False, True], ids=["xcdr1", "xcdr2"])
def test_cyclonedds_writer_to_ferrodds_reader_with_dispose(xcdr2):
    py = cyclone()
    domain = 219
    topic_name = "py_cyc_shape_" + ("x2" if xcdr2 else "x1")
    with loopback(domain) as dp:
        topic = ferrodds.Topic(dp, topic_name, Shape)
        r = ferrodds.DataReader(dp, topic, qos=RELIABLE)
        args = ["pub", "--type", "shape", "--topic", topic_name, "--domain", str(domain),
                "--count", "20", "--instances", "2", "--color", "CY", "--reliable",
                "--keep-all", "--dispose"]
        peer = cyclone_peer(py, *(args + (["--xcdr2"] if xcdr2 else [])))
        samples, disposed = [], set()
        deadline = time.monotonic() + 30
        while (len(samples) < 20 or len(disposed) < 2) and time.monotonic() < deadline:
            r.wait(timeout=0.5)
            for s in r.take():
                if s.info.valid_data:
                    samples.append(s)
                elif s.info.instance_state == "not_alive_disposed":
                    disposed.add(s.info.instance_handle)
        finish(peer)
    assert [(s.data.color, s.data.x, s.data.y, s.data.shapesize) for s in samples] == [
        (f"CY{i % 2}", i % 250, (2 * i) % 250, 30) for i in range(20)
    ]
    # Cyclone sends no key hash: the instances come from our key extractor, and the
    # disposals (key-only payloads) must land on the same two instances.
    handles = {s.data.color: s.info.instance_handle for s in samples}
    assert len(set(handles.values())) == 2
    assert disposed == set(handles.values())


def test_ferrodds_writer_to_cyclonedds_reader():
    py = cyclone()
    domain = 219
    with loopback(domain) as dp:
        shape_topic = ferrodds.Topic(dp, "py_cyc_to_shape", Shape)
        keyed_topic = ferrodds.Topic(dp, "py_cyc_to_keyed", TestDataKeyed)
        sub_shape = cyclone_peer(py, "sub", "--type", "shape", "--topic", "py_cyc_to_shape",
                                 "--domain", str(domain), "--count", "10", "--reliable",
                                 "--keep-all")
        sub_keyed = cyclone_peer(py, "sub", "--type", "keyed", "--topic", "py_cyc_to_keyed",
                                 "--domain", str(domain), "--count", "50", "--reliable",
                                 "--keep-all")
        ws = ferrodds.DataWriter(dp, shape_topic, qos=RELIABLE)
        wk = ferrodds.DataWriter(dp, keyed_topic, qos=RELIABLE)
        assert ws.wait_for_matched(1, timeout=20) and wk.wait_for_matched(1, timeout=20)
        time.sleep(0.3)  # let Cyclone's reader see the match too
        for i in range(10):
            ws.write(Shape("PY", i, 2 * i, 30))
        for i in range(50):
            wk.write(TestDataKeyed([i % 3, 0, 0, 0], 7, i, 0, 0, -1, payload_for(i)))
        ws.wait_for_acknowledgments(timeout=20)
        wk.wait_for_acknowledgments(timeout=20)
        out_shape = finish(sub_shape)
        out_keyed = finish(sub_keyed)
    assert [l for l in out_shape.splitlines() if l.startswith("SAMPLE")] == [
        f"SAMPLE PY {i} {2 * i} 30" for i in range(10)
    ]
    lines = [l for l in out_keyed.splitlines() if l.startswith("SAMPLE")]
    assert sorted(lines, key=lambda l: int(l.split()[2])) == [
        f"SAMPLE {i % 3} {i} 7 {i % 64} ok" for i in range(50)
    ]
