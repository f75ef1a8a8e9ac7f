// Self-checking test runner of the C# binding (loopback only; domains 166-169, 171-178, 181 and 194: the SPDP ports of domains above 232 do not fit in 16 bits): runs every
// [Test]-named method below, prints PASS/FAIL per test and exits non-zero on any failure or
// when the whole run exceeds its time bound. Usage: mono FerroDds.Tests.exe [name-filter]
// Environment: FERRODDS_SHAPE_ECHO = path of the Rust shape_echo example (interop test).
using System;
using System.Diagnostics;
using System.Linq;
using System.Reflection;
using System.Threading;
using FerroDds;

namespace FerroDds.Tests
{
    internal sealed class TestAttribute : Attribute { }

    internal static class Assert
    {
        public static void True(bool c, string what) { if (!c) throw new Exception("assertion failed: " + what); }
        public static void Equal<T>(T expected, T actual, string what)
        {
            if (!Equals(expected, actual)) throw new Exception(what + ": expected " + expected + ", got " + actual);
        }
        public static E Throws<E>(Action a, string what) where E : Exception
        {
            try { a(); }
            catch (E e) { return e; }
            catch (Exception e) { throw new Exception(what + ": expected " + typeof(E).Name + ", got " + e.GetType().Name + ": " + e.Message); }
            throw new Exception(what + ": expected " + typeof(E).Name + ", nothing thrown");
        }
    }

    internal static class Program
    {
        static readonly TimeSpan T = TimeSpan.FromSeconds(10);

        static int Main(string[] args)
        {
            // The whole run is bounded: a hang fails it instead of blocking the suite.
            var watchdog = new Timer(_ => { Console.Error.WriteLine("FAIL: test run exceeded 90 s"); Environment.Exit(3); }, null, 90000, Timeout.Infinite);
            string filter = args.Length > 0 ? args[0] : "";
            var tests = typeof(Program).GetMethods(BindingFlags.Static | BindingFlags.NonPublic)
                .Where(m => m.GetCustomAttributes(typeof(TestAttribute), false).Length > 0 && m.Name.Contains(filter))
                .OrderBy(m => m.Name).ToList();
            int failed = 0;
            foreach (var m in tests)
            {
                var sw = Stopwatch.StartNew();
                try
                {
                    m.Invoke(null, null);
                    Console.WriteLine("PASS {0} ({1} ms)", m.Name, sw.ElapsedMilliseconds);
                }
                catch (TargetInvocationException e)
                {
                    failed++;
                    Console.WriteLine("FAIL {0}: {1}", m.Name, e.InnerException);
                }
            }
            watchdog.Dispose();
            Console.WriteLine("csharp tests: {0} passed, {1} failed", tests.Count - failed, failed);
            return failed == 0 && tests.Count > 0 ? 0 : 1;
        }

        static DomainParticipant Loopback(uint domain) { return new DomainParticipant(domain, ParticipantConfig.Loopback()); }

        static Qos ReliableW() { return Qos.WriterDefault().Reliable().KeepAll(); }
        static Qos ReliableR() { return Qos.ReaderDefault().Reliable().KeepAll(); }

        static void Matched<T>(DataWriter<T> w, DataReader<T> r) where T : class
        {
            Assert.True(w.WaitForMatched(1, T), "writer matched");
            Assert.True(r.WaitForMatched(1, T), "reader matched");
        }

        [Test]
        static void WriteTakeShapes()
        {
            using (var a = Loopback(171))
            using (var b = Loopback(171))
            {
                var w = a.CreateWriter(a.CreateTopic("Square", ShapeType.Type), ReliableW());
                var r = b.CreateReader(b.CreateTopic("Square", ShapeType.Type), ReliableR());
                Matched(w, r);
                var s = new ShapeType { Color = "BLUE", ShapeSize = 30 };
                for (int i = 0; i < 20; i++) { s.X = i; s.Y = 2 * i; w.Write(s); }
                ShapeType got = null;
                SampleInfo info;
                for (int i = 0; i < 20; i++)
                {
                    while (!r.Take(ref got, out info)) Assert.True(r.WaitForData(T), "data " + i);
                    Assert.True(info.ValidData, "valid data");
                    Assert.Equal("BLUE", got.Color, "color");
                    Assert.Equal(i, got.X, "x");
                    Assert.Equal(2 * i, got.Y, "y");
                    Assert.Equal(30, got.ShapeSize, "shapesize");
                    Assert.True(!info.Instance.IsNil, "keyed instance handle");
                }
                Assert.True(r.Take() == null, "nothing left");
            }
        }

        [Test]
        static void WriteTakePerftestTypes()
        {
            using (var a = Loopback(172))
            using (var b = Loopback(172))
            {
                foreach (var type in new[] { TestData.Type, TestData.KeyedType, TestData.LargeType, TestData.KeyedLargeType })
                {
                    string topic = "cs_" + type.TypeName;
                    var w = a.CreateWriter(a.CreateTopic(topic, type), ReliableW());
                    var r = b.CreateReader(b.CreateTopic(topic, type), ReliableR());
                    Matched(w, r);
                    int size = type == TestData.LargeType ? 100000 : 1001;
                    var s = new TestData { EntityId = 7, SeqNum = 42, TimestampSec = -3, TimestampUsec = 999, LatencyPing = -1, BinData = new byte[size] };
                    s.Key[0] = 5;
                    for (int i = 0; i < size; i++) s.BinData[i] = (byte)i;
                    w.Write(s);
                    Assert.True(r.WaitForData(T), type.TypeName + " data");
                    TestData got = r.Take();
                    Assert.True(got != null, type.TypeName + " taken");
                    Assert.Equal(5, (int)got.Key[0], "key");
                    Assert.Equal(42u, got.SeqNum, "seq_num");
                    Assert.Equal(-3, got.TimestampSec, "timestamp_sec");
                    Assert.Equal(999u, got.TimestampUsec, "timestamp_usec");
                    Assert.Equal(-1, got.LatencyPing, "latency_ping");
                    Assert.True(got.BinData.SequenceEqual(s.BinData), type.TypeName + " bin_data (" + got.BinData.Length + " bytes)");
                }
            }
        }

        [Test]
        static void DisposeInstanceAndKeys()
        {
            using (var a = Loopback(173))
            using (var b = Loopback(173))
            {
                var w = a.CreateWriter(a.CreateTopic("Circle", ShapeType.Type), ReliableW());
                var r = b.CreateReader(b.CreateTopic("Circle", ShapeType.Type), ReliableR());
                Matched(w, r);
                var red = new ShapeType { Color = "RED", X = 1 };
                var h = w.RegisterInstance(red);
                Assert.True(!h.IsNil, "registered handle");
                Assert.Equal(h, w.LookupInstance(red), "lookup = register");
                Assert.True(w.LookupInstance(new ShapeType { Color = "GREEN" }).IsNil, "unknown key is nil");
                w.Write(red);
                w.DisposeInstance(red);
                ShapeType got = null;
                SampleInfo info;
                Assert.True(r.WaitForData(T), "data");
                while (!r.Take(ref got, out info)) Assert.True(r.WaitForData(T), "first");
                Assert.True(info.ValidData && got.Color == "RED", "the sample");
                Assert.Equal(h, info.Instance, "instance of the sample");
                var deadline = DateTime.UtcNow + T;
                while (!r.Take(ref got, out info)) { Assert.True(DateTime.UtcNow < deadline, "dispose arrives"); r.WaitForData(TimeSpan.FromMilliseconds(100)); }
                Assert.True(!info.ValidData, "dispose has no data");
                Assert.Equal(2, info.InstanceState, "NOT_ALIVE_DISPOSED");
                // Unkeyed types cannot dispose: the C API's PRECONDITION_NOT_MET.
                var uw = a.CreateWriter(a.CreateTopic("unkeyed", TestData.Type));
                Assert.Throws<PreconditionNotMetException>(() => uw.DisposeInstance(new TestData()), "dispose unkeyed");
            }
        }

        [Test]
        static void WaitSetAndGuard()
        {
            using (var a = Loopback(174))
            using (var b = Loopback(174))
            using (var ws = new WaitSet())
            using (var guard = new GuardCondition())
            {
                var w = a.CreateWriter(a.CreateTopic("ws", ShapeType.Type), ReliableW());
                var r = b.CreateReader(b.CreateTopic("ws", ShapeType.Type), ReliableR());
                Matched(w, r);
                ws.AttachReadCondition(r, 7);
                ws.AttachGuard(guard, 9);
                var tokens = new int[4];
                Assert.Equal(0, ws.Wait(TimeSpan.FromMilliseconds(50), tokens), "nothing triggered: timeout");
                w.Write(new ShapeType { Color = "RED" });
                Assert.Equal(1, ws.Wait(T, tokens), "one triggered");
                Assert.Equal(7, tokens[0], "read condition token");
                Assert.True(r.Take() != null, "taken");
                guard.Trigger(true);
                Assert.Equal(1, ws.Wait(T, tokens), "guard triggered");
                Assert.Equal(9, tokens[0], "guard token");
                guard.Trigger(false);
                ws.Detach(r);
                Assert.Equal(0, ws.Wait(TimeSpan.FromMilliseconds(20), tokens), "detached");
            }
        }

        [Test]
        static void DisposedEntitiesThrow()
        {
            var a = Loopback(175);
            var topic = a.CreateTopic("gone", ShapeType.Type);
            var w = a.CreateWriter(topic);
            var r = a.CreateReader(topic);
            w.Dispose();
            w.Dispose(); // idempotent
            var e = Assert.Throws<AlreadyDeletedException>(() => w.Write(new ShapeType { Color = "RED" }), "write after Dispose");
            Assert.Equal("FERRODDS_RETCODE_ALREADY_DELETED", e.ReturnCodeName, "retcode name");
            Assert.True(e.Message.Length > 0, "message from the C API: " + e.Message);
            Assert.True(e is DdsException, "hierarchy");
            // The participant keeps working after the failure.
            var w2 = a.CreateWriter(topic);
            w2.Write(new ShapeType { Color = "RED" });
            a.Dispose();
            Assert.Throws<AlreadyDeletedException>(() => r.Take(), "reader of a disposed participant");
            Assert.Throws<AlreadyDeletedException>(() => w2.Write(new ShapeType()), "writer of a disposed participant");
            Assert.Throws<AlreadyDeletedException>(() => a.CreateTopic("x", ShapeType.Type), "participant disposed");
            r.Dispose(); // already deleted with its participant: no exception
        }

        sealed class DisposingListener : IDataReaderListener<ShapeType>
        {
            public DomainParticipant Participant;
            public Exception Refused;
            public int Calls;
            public void OnDataAvailable(DataReader<ShapeType> reader)
            {
                try { if (Participant != null) Participant.Dispose(); }
                catch (Exception e) { Refused = e; }
                Interlocked.Increment(ref Calls);
            }
            public void OnSubscriptionMatched(DataReader<ShapeType> reader, MatchedStatus status) { }
        }

        [Test]
        static void BadArgumentsThrow()
        {
            using (var a = Loopback(181))
            using (var b = Loopback(181))
            {
                a.CreateTopic("typed", ShapeType.Type);
                Assert.Throws<PreconditionNotMetException>(() => a.CreateTopic("typed", TestData.Type), "same name, another type");
                var foreign = b.CreateTopic("foreign", ShapeType.Type);
                Assert.Throws<BadParameterException>(() => a.CreateWriter(foreign), "a topic of another participant");
                Assert.Throws<ArgumentNullException>(() => a.CreateTopic<ShapeType>(null, ShapeType.Type), "null name");
                Assert.Throws<ArgumentNullException>(() => a.CreateReader<ShapeType>(null), "null topic");
                Assert.Throws<BadParameterException>(() => a.CreateWriter(a.CreateTopic("q", ShapeType.Type), Qos.WriterDefault().KeepLast(0)), "history depth 0");
                // Disposing the participant from its own listener is refused; it keeps working.
                var l = new DisposingListener { Participant = b };
                var w = a.CreateWriter(a.CreateTopic("selfdelete", ShapeType.Type), ReliableW());
                var r = b.CreateReader(b.CreateTopic("selfdelete", ShapeType.Type), ReliableR(), l);
                Matched(w, r);
                w.Write(new ShapeType { Color = "RED", X = 1 });
                Assert.True(SpinWait.SpinUntil(() => l.Calls >= 1, T), "callback ran");
                Assert.True(l.Refused is DdsException, "refused with a DdsException: " + l.Refused);
                Assert.True(!b.IsDisposed, "participant still alive");
                l.Participant = null;
                Assert.True(r.Take() != null, "reader still works");
                w.Write(new ShapeType { Color = "RED", X = 2 });
                Assert.True(SpinWait.SpinUntil(() => l.Calls >= 2, T), "listener still installed");
            }
        }

        [Test]
        static void SampleBeyondBoundThrows()
        {
            using (var a = Loopback(176))
            {
                var w = a.CreateWriter(a.CreateTopic("bounded", TestData.Type));
                var e = Assert.Throws<SerializationException>(() => w.Write(new TestData { BinData = new byte[TestData.MaxBoundedSeqSize + 1] }), "bin_data over 65470");
                Assert.True(e.Message.Contains("65470"), "message names the bound: " + e.Message);
                w.Write(new TestData { BinData = new byte[TestData.MaxBoundedSeqSize] }); // at the bound: fine
                var sw = a.CreateWriter(a.CreateTopic("shapes_bound", ShapeType.Type));
                Assert.Throws<SerializationException>(() => sw.Write(new ShapeType { Color = new string('c', 129) }), "color over 128");
                sw.Write(new ShapeType { Color = new string('c', 128) });
                Assert.Throws<ArgumentNullException>(() => sw.Write(null), "null sample");
            }
        }

        sealed class Listener : IDataReaderListener<ShapeType>
        {
            public int Calls, Matches;
            public bool Throw;
            public void OnDataAvailable(DataReader<ShapeType> reader)
            {
                Interlocked.Increment(ref Calls);
                if (Throw) throw new InvalidOperationException("thrown by a listener on purpose");
            }
            public void OnSubscriptionMatched(DataReader<ShapeType> reader, MatchedStatus status) { Interlocked.Increment(ref Matches); }
        }

        [Test]
        static void ThrowingListenerDoesNotCrash()
        {
            int reported = 0;
            Action<Exception> onEx = ex => { if (ex is InvalidOperationException) Interlocked.Increment(ref reported); };
            DomainParticipant.ListenerException += onEx;
            try
            {
                using (var a = Loopback(177))
                using (var b = Loopback(177))
                {
                    var l = new Listener { Throw = true };
                    var w = a.CreateWriter(a.CreateTopic("throwing", ShapeType.Type), ReliableW());
                    var r = b.CreateReader(b.CreateTopic("throwing", ShapeType.Type), ReliableR(), l);
                    Matched(w, r);
                    Assert.True(SpinWait.SpinUntil(() => l.Matches >= 1, T), "subscription matched callback");
                    w.Write(new ShapeType { Color = "RED", X = 1 });
                    Assert.True(SpinWait.SpinUntil(() => reported >= 1, T), "exception reported");
                    Assert.True(r.Take() != null, "sample still taken");
                    w.Write(new ShapeType { Color = "RED", X = 2 });
                    Assert.True(SpinWait.SpinUntil(() => reported >= 2, T), "callbacks go on after a throw");
                    var got = r.Take();
                    Assert.True(got != null && got.X == 2, "second sample");
                }
            }
            finally { DomainParticipant.ListenerException -= onEx; }
        }

        [Test]
        static void CdrDecodesOtherEncodings()
        {
            // Big-endian XCDR1 ShapeType "RED", 1, 2, 3.
            byte[] be = { 0, 0, 0, 0, 0, 0, 0, 4, (byte)'R', (byte)'E', (byte)'D', 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3 };
            var s = ShapeType.Type.Deserialize(be, be.Length, null);
            Assert.True(s.Color == "RED" && s.X == 1 && s.Y == 2 && s.ShapeSize == 3, "big-endian XCDR1");
            // Little-endian XCDR2 appendable (D_CDR2): DHEADER then the members.
            byte[] d2 = { 0, 9, 0, 0, 20, 0, 0, 0, 4, 0, 0, 0, (byte)'R', (byte)'E', (byte)'D', 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0 };
            var reuse = s;
            var s2 = ShapeType.Type.Deserialize(d2, d2.Length, reuse);
            Assert.True(ReferenceEquals(s2, reuse) && ReferenceEquals(s2.Color, s.Color), "reused object and string");
            Assert.True(s2.X == 1 && s2.ShapeSize == 3, "XCDR2 values");
            Assert.Throws<SerializationException>(() => ShapeType.Type.Deserialize(be, be.Length - 2, null), "truncated");
            byte[] pl = { 0, 3, 0, 0 };
            Assert.Throws<SerializationException>(() => ShapeType.Type.Deserialize(pl, 4, null), "PL_CDR unsupported");
            // Round trip of our own encoding, padding announced in the header.
            var buf = new byte[64];
            int n = ShapeType.Type.Serialize(new ShapeType { Color = "AB", X = -1 }, buf);
            Assert.Equal(24, n, "serialized length (4 + 4 + 3 + pad 1 + 12)");
            Assert.Equal(0, (int)buf[3], "no end padding");
            var t = new TestData { BinData = new byte[1] };
            n = TestData.Type.Serialize(t, buf);
            Assert.Equal(36, n, "TestData with 1 byte: 4 + 28 + 1 + 3 padding");
            Assert.Equal(3, (int)buf[3], "padding announced");
        }

        [Test]
        static void NoAllocationPerSample()
        {
            using (var a = Loopback(178))
            using (var b = Loopback(178))
            {
                var w = a.CreateWriter(a.CreateTopic("alloc", TestData.Type), ReliableW());
                var r = b.CreateReader(b.CreateTopic("alloc", TestData.Type), ReliableR());
                Matched(w, r);
                var s = new TestData { BinData = new byte[32] };
                TestData got = null;
                SampleInfo info;
                Action round = () =>
                {
                    s.SeqNum++;
                    w.Write(s);
                    while (!r.Take(ref got, out info)) r.WaitForData(T);
                };
                for (int i = 0; i < 200; i++) round();
                // The counter works on this runtime (else the check below could not fail).
                long probe = GC.GetAllocatedBytesForCurrentThread();
                GC.KeepAlive(new byte[1000]);
                Assert.True(GC.GetAllocatedBytesForCurrentThread() - probe >= 1000, "allocation counter counts");
                long before = GC.GetAllocatedBytesForCurrentThread();
                for (int i = 0; i < 2000; i++) round();
                long per = (GC.GetAllocatedBytesForCurrentThread() - before) / 2000;
                Assert.True(per == 0, "bytes allocated per write + take: " + per);
                Assert.Equal(s.SeqNum, got.SeqNum, "last sample");
            }
        }

        [Test]
        static void LargeSamplesIntactWithoutAllocation()
        {
            // 1 MiB samples (fragmented, unbounded type) one after another into one reused
            // object: each arrives with its own bytes (the engine reuses its reassembly and
            // payload buffers from sample to sample) and, warmed up, the managed side
            // allocates nothing per sample.
            using (var a = Loopback(194))
            using (var b = Loopback(194))
            {
                var w = a.CreateWriter(a.CreateTopic("cs_large", TestData.LargeType), ReliableW());
                var r = b.CreateReader(b.CreateTopic("cs_large", TestData.LargeType), ReliableR());
                Matched(w, r);
                const int size = 1 << 20;
                var s = new TestData { BinData = new byte[size] };
                TestData got = null;
                SampleInfo info;
                Action<int> round = k =>
                {
                    s.SeqNum = (uint)k;
                    for (int i = 0; i < size; i += 4093) s.BinData[i] = (byte)(i * 31 + k);
                    s.BinData[size - 1] = (byte)k;
                    w.Write(s);
                    while (!r.Take(ref got, out info)) r.WaitForData(T);
                    // Plain comparisons: Assert.Equal boxes, which the count below would see.
                    if (got.SeqNum != (uint)k || got.BinData.Length != size) throw new Exception("sample " + k + ": seq_num " + got.SeqNum + ", " + got.BinData.Length + " bytes");
                    for (int i = 0; i < size; i += 4093) if (got.BinData[i] != s.BinData[i]) throw new Exception("sample " + k + ": byte " + i + " altered");
                    if (got.BinData[size - 1] != (byte)k) throw new Exception("sample " + k + ": last byte altered");
                };
                for (int k = 0; k < 10; k++) round(k);
                long before = GC.GetAllocatedBytesForCurrentThread();
                for (int k = 10; k < 40; k++) round(k);
                long per = (GC.GetAllocatedBytesForCurrentThread() - before) / 30;
                Assert.True(per == 0, "bytes allocated per 1 MiB write + take: " + per);
            }
        }

        /// <summary>Runs a process with a time limit; returns its exit code and output (stdout + stderr).</summary>
        static int Run(string exe, string args, int limitMs, out string stdout, out string stderr)
        {
            var psi = new ProcessStartInfo(exe, args) { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
            var p = Process.Start(psi);
            var err = p.StandardError.ReadToEndAsync();
            var outp = p.StandardOutput.ReadToEndAsync();
            if (!p.WaitForExit(limitMs)) { p.Kill(); p.WaitForExit(); stdout = outp.Result; stderr = err.Result; return -1; }
            p.WaitForExit();
            stdout = outp.Result;
            stderr = err.Result;
            return p.ExitCode;
        }

        /// <summary>The data row of a -noPrintIntervals summary: its comma-separated numbers.</summary>
        static double[] SummaryRow(string output, string what)
        {
            foreach (var line in output.Split('\n'))
            {
                var t = line.Trim();
                if (t.Length == 0 || !char.IsDigit(t[0])) continue;
                return t.Split(',').Select(x => double.Parse(x.Trim().Length == 0 ? "0" : x.Trim(), System.Globalization.CultureInfo.InvariantCulture)).ToArray();
            }
            throw new Exception(what + ": no summary row in: " + output);
        }

        static void PerftestPair(string pubExe, string pubArgs, string subExe, string subArgs, out string pubOut, out string subOut)
        {
            string subErr = null, subStd = null;
            int subRc = -2;
            var sub = new Thread(() => { subRc = Run(subExe, subArgs, 40000, out subStd, out subErr); });
            sub.Start();
            string pubErr;
            int pubRc = Run(pubExe, pubArgs, 40000, out pubOut, out pubErr);
            sub.Join();
            subOut = subStd;
            Assert.Equal(0, pubRc, "publisher exit code (" + pubErr + ")");
            Assert.Equal(0, subRc, "subscriber exit code (" + subErr + ")");
        }

        [Test]
        static void PerftestInteropWithRust()
        {
            string rust = Environment.GetEnvironmentVariable("FERRODDS_PERFTEST");
            string cs = Environment.GetEnvironmentVariable("FERRODDS_PERFTEST_CS");
            if (string.IsNullOrEmpty(rust) || string.IsNullOrEmpty(cs)) throw new Exception("FERRODDS_PERFTEST and FERRODDS_PERFTEST_CS (the Rust and C# perftests) must be set");
            const string common = " -nic 127.0.0.1 -noPrintIntervals", time = " -executionTime 2";
            string pubOut, subOut;
            // C# latency publisher, Rust subscriber (echoing the pings); every value in -latencyFile.
            string latFile = System.IO.Path.GetTempFileName();
            System.IO.File.Delete(latFile);
            PerftestPair("mono", cs + " -pub -latencyTest -dataLen 32 -domain 166 -latencyFile " + latFile + common + time, rust, "-sub -dataLen 32 -domain 166" + common, out pubOut, out subOut);
            var lat = SummaryRow(pubOut, "C# latency summary");
            Assert.True(lat[0] == 32 && lat[3] > 0 && lat[5] >= lat[3], "C# latency row (size, ave, std, min, max, p50, ...): " + pubOut);
            var fileLines = System.IO.File.ReadAllLines(latFile);
            System.IO.File.Delete(latFile);
            Assert.True(fileLines.Length > 100 && fileLines[0] == "Sample Number, Value" && fileLines[fileLines.Length - 1] == "", "-latencyFile: header, rows, blank line");
            var values = fileLines.Skip(1).Take(fileLines.Length - 2).Select((l, i) =>
            {
                var f = l.Split(new[] { ", " }, StringSplitOptions.None);
                Assert.True(f.Length == 2 && f[0] == i.ToString(System.Globalization.CultureInfo.InvariantCulture), "-latencyFile row " + i + ": " + l);
                return long.Parse(f[1], System.Globalization.CultureInfo.InvariantCulture);
            }).OrderBy(v => v).ToArray();
            Assert.True(values[0] == (long)lat[3] && values[values.Length - 1] == (long)lat[4] && values[values.Length * 50 / 100] == (long)lat[5],
                "-latencyFile values give the summary's min, max and p50 (" + values[0] + ", " + values[values.Length - 1] + ", " + values[values.Length * 50 / 100] + "): " + pubOut);
            var thr = SummaryRow(subOut, "Rust throughput summary");
            Assert.True(thr[0] == 32 && thr[1] > 100, "Rust subscriber received the C# samples: " + subOut);
            // Rust throughput publisher (batching on), C# subscriber, keyed.
            PerftestPair(rust, "-pub -dataLen 200 -keyed -instances 4 -domain 167" + common + time, "mono", cs + " -sub -dataLen 200 -keyed -domain 167" + common, out pubOut, out subOut);
            thr = SummaryRow(subOut, "C# throughput summary");
            Assert.True(thr[0] == 200 && thr[1] > 1000, "C# subscriber received the Rust samples: " + subOut);
            Assert.Equal(0.0, thr[4], "lost samples (reliable)");
            // The C# perftest refuses options as the Rust one does.
            string o, e;
            Assert.Equal(1, Run("mono", cs + " -sub -executionTime 2", 20000, out o, out e), "exit code of a refused option");
            Assert.True(e.Contains("Cannot use '-executionTime' while setting '-sub'."), "refusal message: " + e);
            Assert.Equal(1, Run("mono", cs + " -pub -dataLen 20", 20000, out o, out e), "exit code of a bad value");
            Assert.True(e.Contains("-dataLen: 20"), "bad value named: " + e);
            Assert.Equal(1, Run("mono", cs + " -frobnicate", 20000, out o, out e), "exit code of an unknown option");
            Assert.True(e.Contains("'-frobnicate'"), "unknown option named: " + e);
        }

        [Test]
        static void InteropWithRust()
        {
            string exe = Environment.GetEnvironmentVariable("FERRODDS_SHAPE_ECHO");
            if (string.IsNullOrEmpty(exe)) throw new Exception("FERRODDS_SHAPE_ECHO (the Rust shape_echo example) is not set");
            using (var p = Loopback(169))
            {
                var w = p.CreateWriter(p.CreateTopic("CsToRust", ShapeType.Type), ReliableW());
                var r = p.CreateReader(p.CreateTopic("RustToCs", ShapeType.Type), ReliableR());
                var psi = new ProcessStartInfo(exe, "169 CsToRust RustToCs 5") { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
                using (var rust = Process.Start(psi))
                {
                    var output = new System.Text.StringBuilder();
                    rust.OutputDataReceived += (o, e) => { if (e.Data != null) lock (output) output.AppendLine(e.Data); };
                    rust.ErrorDataReceived += (o, e) => { if (e.Data != null) lock (output) output.AppendLine(e.Data); };
                    rust.BeginOutputReadLine();
                    rust.BeginErrorReadLine();
                    try
                    {
                        Matched(w, r);
                        for (int i = 0; i < 5; i++) w.Write(new ShapeType { Color = "PURPLE", X = i, Y = 10 + i, ShapeSize = 25 });
                        ShapeType got = null;
                        SampleInfo info;
                        for (int i = 0; i < 5; i++)
                        {
                            while (!r.Take(ref got, out info)) Assert.True(r.WaitForData(T), "echo " + i + " from Rust");
                            Assert.True(got.Color == "PURPLE" && got.X == 1000 + i && got.Y == 10 + i && got.ShapeSize == 25,
                                "echo " + i + ": " + got.Color + " " + got.X + " " + got.Y);
                        }
                        Assert.True(rust.WaitForExit(15000), "rust exits");
                        rust.WaitForExit();
                        string text;
                        lock (output) text = output.ToString();
                        Assert.Equal(0, rust.ExitCode, "rust exit code (" + text + ")");
                        Assert.True(text.Contains("echoed PURPLE 4 14 25"), "Rust decoded the C# sample: " + text);
                    }
                    finally
                    {
                        if (!rust.HasExited) rust.Kill();
                    }
                }
            }
        }
    }
}
