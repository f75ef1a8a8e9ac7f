// The C# perftest: RTI Perftest's command line and CSV output (the subset the published C#
// runs use) over the FerroDDS C# API, speaking the same protocol as the Rust perftest
// (tools/perftest): topics Throughput, Latency and Announcement of the perftest types,
// initialization burst, pings, FINISHED handshake. Results on stdout, progress on stderr.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using FerroDds;

namespace FerroDds.Perftest
{
    internal sealed class UsageException : Exception { public UsageException(string m) : base(m) { } }

    internal sealed class Options
    {
        public bool Pub, LatencyTest, NoPrintIntervals, NoOutputHeaders, BestEffort, Keyed, Help;
        public uint Domain = 1;
        public long DataLen = 100;
        public long ExecutionTime;
        public long? NumIter, LatencyCount, BatchSize;
        public long Instances = 1, SendQueueSize = 50;
        public int Pid, Sid, NumSubscribers = 1, NumPublishers = 1;
        public string Nic, Transport, LatencyFile;
        public readonly List<string> Peers = new List<string>();

        public const int Overhead = 28, InitializeSize = 1234, FinishedSize = 1235, LengthChangedSize = 1236;
        public const uint ControlInstance = 65535;

        static readonly string[] Names = {
            "-pub", "-sub", "-domain", "-dataLen", "-executionTime", "-latencyTest", "-noPrintIntervals",
            "-noOutputHeaders", "-bestEffort", "-keyed", "-instances", "-batchSize", "-nic", "-peer",
            "-transport", "-numIter", "-latencyCount", "-sidMultiSubTest", "-pidMultiPubTest",
            "-numSubscribers", "-numPublishers", "-sendQueueSize", "-latencyFile", "-help",
        };

        public long EffNumIter { get { return NumIter ?? (LatencyTest ? 10000000L : 100000000L); } }
        public long EffLatencyCount { get { return LatencyCount ?? (LatencyTest ? 1 : 10000); } }
        public bool Large { get { return DataLen > Overhead + TestData.MaxBoundedSeqSize; } }

        /// <summary>Batch bytes when batching is on, else 0 (the Rust perftest's decision for DDS runs).</summary>
        public long Batching(out string line)
        {
            line = "\tBatching: No (Use \"-batchSize\" to setup batching)";
            if (!Pub) return 0;
            if (LatencyTest) { line = "\tBatching: Disabled by RTI Perftest.\n\t\t  BatchSize disabled for a Latency Test"; return 0; }
            long size = BatchSize ?? 8192;
            if (size == 0) return 0;
            if (Large) { line = "\tBatching: Disabled by RTI Perftest.\n\t\t  BatchSize cannot be used with Fragmented Samples."; return 0; }
            if (size < 2 * DataLen) { line = "\tBatching: Disabled by RTI Perftest.\n\t\t  BatchSize is smaller than 2 times the sample size."; return 0; }
            line = "\tBatching: " + size + " Bytes (Use \"-batchSize 0\" to disable batching)";
            return size;
        }

        public static Options Parse(string[] args)
        {
            var o = new Options();
            var seen = new HashSet<string>();
            for (int i = 0; i < args.Length; i++)
            {
                string name = Resolve(args[i]);
                seen.Add(name);
                Func<long> num = () =>
                {
                    if (i + 1 >= args.Length) throw new UsageException("Missing value for " + name);
                    long v;
                    if (!long.TryParse(args[++i], NumberStyles.Integer, CultureInfo.InvariantCulture, out v) || v < 0)
                        throw new UsageException("Bad value for " + name + ": '" + args[i] + "' is not a non-negative integer");
                    return v;
                };
                Func<string> str = () =>
                {
                    if (i + 1 >= args.Length) throw new UsageException("Missing value for " + name);
                    return args[++i];
                };
                switch (name)
                {
                    case "-pub": o.Pub = true; break;
                    case "-sub": o.Pub = false; break;
                    case "-domain":
                        long d = num();
                        if (d > 232) throw new UsageException("Bad value for -domain: " + d + " (its ports do not fit in 16 bits above 232)");
                        o.Domain = (uint)d; break;
                    case "-dataLen":
                        o.DataLen = num();
                        if (o.DataLen < Overhead) throw new UsageException("Bad value for -dataLen: " + o.DataLen + " is below the minimum 28");
                        if (o.DataLen > 2147482620) throw new UsageException("Bad value for -dataLen: " + o.DataLen + " is above the maximum 2147482620");
                        break;
                    case "-executionTime": o.ExecutionTime = num(); break;
                    case "-latencyTest": o.LatencyTest = true; break;
                    case "-noPrintIntervals": o.NoPrintIntervals = true; break;
                    case "-noOutputHeaders": o.NoOutputHeaders = true; break;
                    case "-bestEffort": o.BestEffort = true; break;
                    case "-keyed": o.Keyed = true; break;
                    case "-instances":
                        o.Instances = num();
                        if (o.Instances < 1) throw new UsageException("Bad value for -instances: must be at least 1");
                        break;
                    case "-batchSize": o.BatchSize = num(); break;
                    case "-nic": o.Nic = str(); break;
                    case "-peer": o.Peers.Add(str()); break;
                    case "-transport":
                        o.Transport = str();
                        if (o.Transport != "UDPv4" && o.Transport != "SHMEM")
                            throw new UsageException("Bad value for -transport: '" + o.Transport + "' (the C# perftest offers UDPv4 and SHMEM)");
                        break;
                    case "-numIter": o.NumIter = num(); break;
                    case "-latencyCount": o.LatencyCount = Math.Max(1, num()); break;
                    case "-sidMultiSubTest": o.Sid = (int)num(); break;
                    case "-pidMultiPubTest": o.Pid = (int)num(); break;
                    case "-numSubscribers": o.NumSubscribers = (int)Math.Max(1, num()); break;
                    case "-numPublishers": o.NumPublishers = (int)Math.Max(1, num()); break;
                    case "-sendQueueSize": o.SendQueueSize = Math.Max(1, num()); break;
                    case "-latencyFile":
                        // An optional value, as in RTI's perftest: the next argument unless it is an option.
                        o.LatencyFile = i + 1 < args.Length && !args[i + 1].StartsWith("-", StringComparison.Ordinal)
                            ? args[++i] : "latency_samples.csv";
                        break;
                    case "-help": o.Help = true; break;
                }
            }
            if (!o.Pub)
                foreach (var pubOnly in new[] { "-executionTime", "-latencyTest", "-batchSize", "-numIter", "-latencyCount", "-latencyFile" })
                    if (seen.Contains(pubOnly))
                        throw new UsageException("Cannot use '" + pubOnly + "' while setting '-sub'.");
            if (o.Transport == "SHMEM" && (o.Nic != null || o.Peers.Count > 0))
                throw new UsageException("-transport SHMEM is for one host: -nic and -peer do not apply");
            return o;
        }

        /// <summary>Case-insensitive exact name, or a unique prefix (RTI's parser accepts both).</summary>
        static string Resolve(string arg)
        {
            foreach (var n in Names) if (string.Equals(n, arg, StringComparison.OrdinalIgnoreCase)) return n;
            string found = null;
            foreach (var n in Names)
                if (arg.Length > 2 && n.StartsWith(arg, StringComparison.OrdinalIgnoreCase))
                {
                    if (found != null) throw new UsageException("Ambiguous option '" + arg + "' (" + found + ", " + n + ")");
                    found = n;
                }
            if (found == null) throw new UsageException("Unknown option '" + arg + "' (not implemented in the C# perftest)");
            return found;
        }

        public const string HelpText =
@"Usage: perftest_cs [options]
  -pub | -sub                 role (default -sub)
  -domain <id>                DDS domain (default 1)
  -dataLen <bytes>            sample size, 28 .. 2147482620 (default 100)
  -executionTime <s>          stop after this many seconds
  -numIter <n>                samples to send
  -latencyTest                ping-pong latency test
  -latencyCount <n>           one ping every n samples
  -noPrintIntervals           print only summaries
  -noOutputHeaders            no header lines
  -bestEffort                 best-effort throughput/latency topics
  -keyed, -instances <n>      keyed type and instances
  -batchSize <bytes>          writer batching (0: off)
  -nic <name|address>         interface
  -peer <address>             unicast discovery peer (repeatable)
  -transport <UDPv4|SHMEM>    transport (default: UDPv4 and shared memory)
  -latencyFile [file]         append every one-way latency value (µs, arrival order), default latency_samples.csv
  -sidMultiSubTest <id>, -pidMultiPubTest <id>, -numSubscribers <n>, -numPublishers <n>, -sendQueueSize <n>";
    }

    /// <summary>
    /// The perftest types without payload copies (as the Rust perftest: the payload is
    /// always zeros and only its length matters). Serialize writes the header fields and the
    /// length and leaves the payload bytes of the writer's pooled buffer as they are: zeros,
    /// since nothing but the 32 header bytes and zero padding is ever written into a buffer
    /// this instance has cleared once. Deserialize checks the length against the bytes and
    /// hands out one shared zero array per length. One instance per writer or reader.
    /// </summary>
    internal sealed class ZeroPayloadType : ITopicType<TestData>
    {
        readonly ITopicType<TestData> shipped;
        readonly int bound;
        byte[] cleared;
        readonly Dictionary<int, byte[]> zeros = new Dictionary<int, byte[]>();

        public ZeroPayloadType(ITopicType<TestData> shipped)
        {
            this.shipped = shipped;
            bound = shipped.TypeSupport == 2 || shipped.TypeSupport == 3 ? TestData.MaxBoundedSeqSize : -1;
        }
        public uint TypeSupport { get { return shipped.TypeSupport; } }
        public string TypeName { get { return shipped.TypeName; } }
        public int MaxSerializedSize(TestData s) { return shipped.MaxSerializedSize(s); }

        public unsafe int Serialize(TestData s, byte[] buffer)
        {
            if (!ReferenceEquals(buffer, cleared))
            {
                Array.Clear(buffer, 0, buffer.Length);
                cleared = buffer;
            }
            int n = s.BinData.Length;
            int pad = -(Body + n) & 3, total = 4 + Body + n + pad;
            if (!BitConverter.IsLittleEndian || buffer.Length < total) return SerializeCdr(s, buffer);
            // What CdrWriter writes (XCDR1 little-endian, every member aligned already), in
            // one pass of stores: Mono calls each CdrWriter method (about 80 ns a sample).
            fixed (byte* b = buffer)
            fixed (byte* k = s.Key)
            {
                *(uint*)b = 0x0100u | (uint)pad << 24;
                *(uint*)(b + 4) = *(uint*)k;
                *(int*)(b + 8) = s.EntityId;
                *(uint*)(b + 12) = s.SeqNum;
                *(int*)(b + 16) = s.TimestampSec;
                *(uint*)(b + 20) = s.TimestampUsec;
                *(int*)(b + 24) = s.LatencyPing;
                *(uint*)(b + 28) = (uint)n;
            }
            return total;
        }

        /// <summary>Body bytes before the payload: key[4], five 32-bit members, the length.</summary>
        const int Body = 28;

        int SerializeCdr(TestData s, byte[] buffer)
        {
            var w = new CdrWriter(buffer);
            w.WriteBytes(s.Key, 0, 4);
            w.WriteI32(s.EntityId);
            w.WriteU32(s.SeqNum);
            w.WriteI32(s.TimestampSec);
            w.WriteU32(s.TimestampUsec);
            w.WriteI32(s.LatencyPing);
            w.WriteU32((uint)s.BinData.Length);
            w.SkipWritten(s.BinData.Length);
            return w.Finish();
        }

        public unsafe TestData Deserialize(byte[] data, int length, TestData reuse)
        {
            // XCDR1 little-endian (what FerroDDS writes) on a little-endian host: read the
            // members in place; anything else, or bytes CdrReader would refuse, goes through
            // CdrReader (which reads other encodings and throws the errors).
            if (!BitConverter.IsLittleEndian || length < 4 + Body || length > data.Length || data[0] != 0 || data[1] != 0x01)
                return DeserializeCdr(data, length, reuse);
            var s = reuse ?? new TestData();
            int n;
            fixed (byte* b = data)
            {
                uint len = *(uint*)(b + 4 + Body - 4);
                if ((bound >= 0 && len > (uint)bound) || len > (uint)(length - 4 - Body)) return DeserializeCdr(data, length, reuse);
                n = (int)len;
                fixed (byte* k = s.Key) *(uint*)k = *(uint*)(b + 4);
                s.EntityId = *(int*)(b + 8);
                s.SeqNum = *(uint*)(b + 12);
                s.TimestampSec = *(int*)(b + 16);
                s.TimestampUsec = *(uint*)(b + 20);
                s.LatencyPing = *(int*)(b + 24);
            }
            SetZeros(s, n);
            return s;
        }

        TestData DeserializeCdr(byte[] data, int length, TestData reuse)
        {
            var r = new CdrReader(data, length);
            var s = reuse ?? new TestData();
            r.ReadBytes(s.Key, 0, 4);
            s.EntityId = r.ReadI32();
            s.SeqNum = r.ReadU32();
            s.TimestampSec = r.ReadI32();
            s.TimestampUsec = r.ReadU32();
            s.LatencyPing = r.ReadI32();
            int n = r.ReadOctetSeqLength(bound);
            r.Skip(n);
            SetZeros(s, n);
            return s;
        }

        void SetZeros(TestData s, int n)
        {
            if (s.BinData.Length != n)
            {
                byte[] z;
                if (!zeros.TryGetValue(n, out z)) { z = new byte[n]; zeros[n] = z; }
                s.BinData = z;
            }
        }
    }

    internal sealed class Printer
    {
        readonly TextWriter o;
        readonly bool intervals, headers;
        bool latSummaryHeader, thrSummaryHeader;
        long lastFlush = Environment.TickCount;
        public bool Intervals { get { return intervals; } }

        public Printer(Options opts)
        {
            o = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false), 1 << 16);
            intervals = !opts.NoPrintIntervals;
            headers = !opts.NoOutputHeaders;
        }

        static string F(double v, int w, int p)
        {
            if (double.IsNaN(v) || double.IsInfinity(v)) v = 0;
            return v.ToString("F" + p, CultureInfo.InvariantCulture).PadLeft(w);
        }
        static string R(long v, int w) { return v.ToString(CultureInfo.InvariantCulture).PadLeft(w); }

        void MaybeFlush()
        {
            if (Environment.TickCount - lastFlush >= 100) { lastFlush = Environment.TickCount; o.Flush(); }
        }

        public void LatencyHeader(long len)
        {
            if (headers && intervals) o.Write("\nIntervals One-Way Latency for " + len + " Bytes:\nLength (Bytes), Latency (μs), Ave (μs), Std (μs), Min (μs), Max (μs)\n");
        }
        public void LatencyInterval(long len, long lat, double ave, double std, long min, long max)
        {
            if (!intervals) return;
            o.Write(R(len, 14) + "," + R(lat, 13) + "," + F(ave, 9, 0) + "," + F(std, 9, 1) + "," + R(min, 9) + "," + R(max, 9) + "\n");
            MaybeFlush();
        }
        public void LatencySummary(long len, double ave, double std, long min, long max, long p50, long p90, long p99, long p9999, long p999999)
        {
            if (headers && (intervals || !latSummaryHeader))
            {
                if (intervals) o.Write("\nOne-way Latency Summary:\n");
                o.Write("Sample Size (Bytes), Ave (μs), Std (μs), Min (μs), Max (μs), 50% (μs), 90% (μs), 99% (μs), 99.99% (μs), 99.9999% (μs)\n");
                latSummaryHeader = true;
            }
            o.Write(R(len, 19) + "," + F(ave, 9, 0) + "," + F(std, 9, 1) + "," + R(min, 9) + "," + R(max, 9) + "," + R(p50, 9) + "," + R(p90, 9) + "," + R(p99, 9) + "," + R(p9999, 12) + "," + R(p999999, 14) + "\n");
            o.Flush();
        }
        public void ThroughputHeader(long len)
        {
            if (headers && intervals) o.Write("\nInterval Throughput for " + len + " Bytes:\nLength (Bytes), Total Samples,  Samples/s, Avg Samples/s,     Mbps,  Avg Mbps, Lost Samples, Lost Samples (%)\n");
        }
        public void ThroughputInterval(long len, long total, long rate, double avgRate, double mbps, double avgMbps, long lost, double lostPct)
        {
            if (!intervals) return;
            o.Write(R(len, 14) + "," + R(total, 14) + "," + R(rate, 11) + "," + F(avgRate, 14, 0) + "," + F(mbps, 9, 1) + "," + F(avgMbps, 10, 1) + ", " + R(lost, 12) + ", " + F(lostPct, 16, 2) + "\n");
            o.Flush();
        }
        public void ThroughputSummary(long len, long total, long rate, double mbps, long lost, double lostPct)
        {
            if (headers && (intervals || !thrSummaryHeader))
            {
                if (intervals) o.Write("\nThroughput Summary:\n");
                o.Write("Sample Size (Bytes), Total Samples, Avg Samples/s,    Avg Mbps, Lost Samples, Lost Samples (%)\n");
                thrSummaryHeader = true;
            }
            string r = rate == 0 ? new string(' ', 14) : R(rate, 14);
            o.Write(R(len, 19) + "," + R(total, 14) + "," + r + "," + F(mbps, 12, 1) + ", " + R(lost, 12) + ", " + F(lostPct, 16, 2) + "\n");
            o.Flush();
        }
        public void Finish() { o.Flush(); }
    }

    /// <summary>
    /// Wakes the publisher's main thread when its pong arrived (what the Rust perftest's
    /// condition variable does). On Linux x64 and arm64 a futex word: one system call to
    /// wait, one to wake, and none when the pong came before the wait. Mono's Monitor.Wait
    /// creates and closes a wait handle per call, and its events hold a mutex while they
    /// wake the waiter, which then blocks on it: on one CPU that cost about 0.3 µs of
    /// one-way latency at 32 B (the thread sending the ping runs until it waits). Other
    /// platforms use an AutoResetEvent.
    /// </summary>
    internal sealed class PongSignal
    {
        [DllImport("libc", EntryPoint = "syscall")]
        static extern unsafe long Futex(long number, int* word, int op, int val, Timespec* timeout, IntPtr word2, int val3);

        [StructLayout(LayoutKind.Sequential)]
        struct Timespec { public long Sec, Nsec; }

        const int WaitPrivate = 128, WakePrivate = 1 | 128;
        const int Idle = 0, Signalled = 1, Waiting = 2;
        readonly long futexCall;
        readonly IntPtr word; // unmanaged: the kernel keys a futex by address
        readonly AutoResetEvent fallback;

        public unsafe PongSignal()
        {
            futexCall = !RuntimeInformation.IsOSPlatform(OSPlatform.Linux) ? 0
                : RuntimeInformation.ProcessArchitecture == Architecture.X64 ? 202
                : RuntimeInformation.ProcessArchitecture == Architecture.Arm64 ? 98 : 0;
            if (futexCall == 0) { fallback = new AutoResetEvent(false); return; }
            word = Marshal.AllocHGlobal(sizeof(int)); // for the process's lifetime
            *(int*)word = Idle;
        }

        public unsafe void Set()
        {
            if (fallback != null) { fallback.Set(); return; }
            int* w = (int*)word;
            if (Interlocked.Exchange(ref *w, Signalled) == Waiting) Futex(futexCall, w, WakePrivate, 1, null, IntPtr.Zero, 0);
        }

        /// <summary>Waits for a Set at most ms milliseconds (or returns early: callers re-check their condition).</summary>
        public unsafe void Wait(int ms)
        {
            if (fallback != null) { fallback.WaitOne(ms); return; }
            int* w = (int*)word;
            if (Interlocked.CompareExchange(ref *w, Waiting, Idle) == Idle)
            {
                var t = new Timespec { Sec = ms / 1000, Nsec = ms % 1000 * 1000000L };
                Futex(futexCall, w, WaitPrivate, Waiting, &t, IntPtr.Zero, 0);
            }
            Interlocked.Exchange(ref *w, Idle);
        }
    }

    internal static class Program
    {
        static readonly Stopwatch Clock = Stopwatch.StartNew();
        static long ClockUs() { return (long)(Clock.ElapsedTicks * (1e6 / Stopwatch.Frequency)); }
        static void Progress(string s) { Console.Error.WriteLine(s); }
        static volatile bool stop;

        static int Main(string[] args)
        {
            Options opts;
            try { opts = Options.Parse(args); }
            catch (UsageException e)
            {
                Console.Error.WriteLine(e.Message);
                Console.Error.WriteLine("Use '-help' for the list of options.");
                return 1;
            }
            if (opts.Help) { Console.WriteLine(Options.HelpText); return 0; }
            Console.CancelKeyPress += (s, e) => { if (stop) return; e.Cancel = true; stop = true; };
            try
            {
                var p = new Perf(opts);
                if (opts.Pub) p.RunPublisher(); else p.RunSubscriber();
                p.Close();
                Progress("Test ended.");
                return 0;
            }
            catch (Exception e)
            {
                Console.Error.WriteLine("Error: " + e.GetType().Name + ": " + e.Message);
                return 1;
            }
        }

        sealed class Perf
        {
            readonly Options o;
            readonly DomainParticipant dp;
            readonly ITopicType<TestData> type;
            readonly Printer printer;
            readonly long batch;
            readonly string batchLine;

            public Perf(Options opts)
            {
                o = opts;
                printer = new Printer(opts);
                batch = opts.Batching(out batchLine);
                type = opts.Keyed ? (opts.Large ? TestData.KeyedLargeType : TestData.KeyedType)
                                  : (opts.Large ? TestData.LargeType : TestData.Type);
                var cfg = ParticipantConfig.Default();
                bool loopback = false;
                if (opts.Nic != null)
                {
                    cfg.Interface = opts.Nic;
                    loopback = opts.Nic == "lo" || opts.Nic.StartsWith("127.", StringComparison.Ordinal);
                }
                cfg.SharedMemory = opts.Transport == "UDPv4" ? 0 : 1;
                if (opts.Transport == "SHMEM") { cfg.Interface = "lo"; loopback = true; }
                var peers = new List<string>(opts.Peers);
                if (loopback || peers.Count > 0)
                {
                    cfg.Multicast = 0;
                    if (peers.Count == 0) peers.Add("127.0.0.1");
                }
                if (peers.Count > 0) cfg.Peers = string.Join(",", peers.ToArray());
                PrintSummary(cfg);
                dp = new DomainParticipant(opts.Domain, cfg);
            }

            void PrintSummary(ParticipantConfig cfg)
            {
                var s = new StringBuilder();
                s.Append("FerroDDS C# Perftest 0.1.0 (RTI Perftest 4.3 compatible; FerroDDS 0.1.0 through the C API)\n\n");
                if (o.Pub)
                    s.Append(o.LatencyTest ? "Mode: LATENCY TEST (Ping-Pong test)\n\n" : "Mode: THROUGHPUT TEST\n      (Use \"-latencyTest\" for Latency Mode)\n\n");
                s.Append("Perftest Configuration:\n");
                s.Append("\tReliability: " + (o.BestEffort ? "Best Effort" : "Reliable") + "\n");
                s.Append("\tKeyed: " + (o.Keyed ? "Yes" : "No") + "\n");
                if (o.Pub)
                {
                    s.Append("\tPublisher ID: " + o.Pid + "\n");
                    s.Append("\tLatency count: 1 latency sample every " + o.EffLatencyCount + " samples\n");
                }
                else s.Append("\tSubscriber ID: " + o.Sid + "\n");
                s.Append("\tData Size: " + o.DataLen + "\n");
                if (o.Pub)
                {
                    s.Append(batchLine + "\n");
                    s.Append("\tPublication Rate: Unlimited (Not set)\n");
                    if (o.ExecutionTime > 0) s.Append("\tExecution time: " + o.ExecutionTime + " seconds\n");
                    else s.Append("\tNumber of samples: " + o.EffNumIter + "\n");
                }
                s.Append("\tReceive using: Listeners\n");
                s.Append("\tDomain: " + o.Domain + "\n");
                if (o.Large) s.Append("[IMPORTANT]: -datalen (" + o.DataLen + ") is greater than 65498. Samples will be fragmented.\n[IMPORTANT]: Using the Unbounded Sequence Type.\n");
                s.Append("\nTransport Configuration:\n");
                s.Append("\tKind: " + (o.Transport ?? "UDPv4 & SHMEM (default)") + "\n");
                s.Append("\tNic: " + (cfg.Interface ?? "default") + "\n");
                s.Append("\tPeers: " + (cfg.Peers ?? "none (multicast discovery)") + "\n");
                Console.Error.Write(s.ToString());
                Console.Error.WriteLine();
            }

            public void Close() { printer.Finish(); dp.Dispose(); }

            Qos WriterQos(string topic)
            {
                var q = Qos.WriterDefault().Reliable().MaxBlockingTime(TimeSpan.FromMilliseconds(100));
                if (topic == "Announcement") return q.TransientLocal().KeepAll();
                if (o.BestEffort) q.BestEffort();
                q.KeepAll();
                if (topic == "Throughput")
                {
                    long queue = o.SendQueueSize;
                    if (batch > 0) { q.BatchBytes(batch); queue *= Math.Max(1, batch / o.DataLen); }
                    int qn = (int)Math.Min(queue, int.MaxValue);
                    q.ResourceLimits(qn, -1, qn);
                }
                return q;
            }

            Qos ReaderQos(string topic)
            {
                var q = Qos.ReaderDefault().Reliable().KeepAll();
                if (topic == "Announcement") return q.TransientLocal();
                if (o.BestEffort) q.BestEffort();
                return q;
            }

            DataWriter<TestData> Writer(string topic)
            {
                return dp.CreateWriter(dp.CreateTopic(topic, (ITopicType<TestData>)new ZeroPayloadType(type)), WriterQos(topic));
            }

            DataReader<TestData> Reader(string topic, Action<TestData> onSample)
            {
                return dp.CreateReader(dp.CreateTopic(topic, (ITopicType<TestData>)new ZeroPayloadType(type)), ReaderQos(topic), new Listen(onSample));
            }

            /// <summary>Takes every sample from the listener thread into one reused object.</summary>
            sealed class Listen : IDataReaderListener<TestData>
            {
                readonly Action<TestData> f;
                TestData s;
                public Listen(Action<TestData> f) { this.f = f; }
                public void OnDataAvailable(DataReader<TestData> r)
                {
                    SampleInfo info;
                    while (r.Take(ref s, out info)) if (info.ValidData) f(s);
                }
                public void OnSubscriptionMatched(DataReader<TestData> r, MatchedStatus st) { }
            }

            static void Write(DataWriter<TestData> w, TestData m)
            {
                // A full KEEP_ALL history blocks up to max_blocking_time: retry (a stop ends it).
                while (true)
                {
                    try { w.Write(m); return; }
                    catch (DdsTimeoutException) { if (stop) return; }
                }
            }

            static bool WaitUntil(Func<bool> cond)
            {
                while (!cond()) { if (stop) return false; Thread.Sleep(10); }
                return true;
            }

            static void SetKey(TestData m, uint k) { m.Key[0] = (byte)k; m.Key[1] = (byte)(k >> 8); m.Key[2] = (byte)(k >> 16); m.Key[3] = (byte)(k >> 24); }

            // ---- publisher ----

            readonly object latLock = new object();
            readonly PongSignal pong = new PongSignal();
            long[] latValues = new long[1 << 20];
            int latCount;
            double latSum, latSumSq;
            long latMin = long.MaxValue, latMax, current = -1, lastPongSeq = -1, skew;

            void OnPong(TestData m)
            {
                int size = m.BinData.Length;
                if (size == Options.InitializeSize || size == Options.FinishedSize || size == Options.LengthChangedSize) return;
                long now = ClockUs();
                long len = size + Options.Overhead;
                lock (latLock)
                {
                    Interlocked.Exchange(ref lastPongSeq, m.SeqNum);
                    if (current != len)
                    {
                        // The first pong of a size only starts the statistics.
                        current = len;
                        latCount = 0; latSum = latSumSq = 0; latMin = long.MaxValue; latMax = 0;
                        pong.Set();
                        printer.LatencyHeader(len);
                        return;
                    }
                    long sent = (long)(((ulong)(uint)m.TimestampSec << 32) | m.TimestampUsec);
                    if (now < sent) { skew++; pong.Set(); return; }
                    long l = (now - sent) / 2;
                    if (latCount < latValues.Length) latValues[latCount] = l;
                    latCount++;
                    latSum += l; latSumSq += (double)l * l;
                    if (l < latMin) latMin = l;
                    if (l > latMax) latMax = l;
                    pong.Set();
                    if (printer.Intervals)
                    {
                        double ave = latSum / latCount;
                        printer.LatencyInterval(len, l, ave, Math.Sqrt(Math.Max(0, latSumSq / latCount - ave * ave)), latMin, latMax);
                    }
                }
            }

            void WaitForPong(uint seq, bool reliable)
            {
                long t0 = Stopwatch.GetTimestamp();
                while (Interlocked.Read(ref lastPongSeq) != seq && !stop)
                {
                    long ms = (Stopwatch.GetTimestamp() - t0) * 1000 / Stopwatch.Frequency;
                    if ((!reliable && ms >= 200) || ms >= 30000) return;
                    pong.Wait(reliable ? 100 : (int)(200 - ms));
                }
            }

            /// <summary>Appends the values in arrival order as the Rust perftest's -latencyFile does: "Sample Number, Value" rows, a blank line.</summary>
            void SaveLatencyFile(int n)
            {
                Progress("Saving latency information in \"" + o.LatencyFile + "\".");
                using (var f = new StreamWriter(o.LatencyFile, true, new UTF8Encoding(false), 1 << 16))
                {
                    f.Write("Sample Number, Value\n");
                    for (int k = 0; k < n; k++) f.Write(k.ToString(CultureInfo.InvariantCulture) + ", " + latValues[k].ToString(CultureInfo.InvariantCulture) + "\n");
                    f.Write("\n");
                }
            }

            static bool IsPingSlot(long i, long spb, long lc)
            {
                long b = i / spb;
                return b % lc == 0 && i % spb == (b / lc) % spb;
            }

            public void RunPublisher()
            {
                var ann = new HashSet<int>();
                var finished = new HashSet<int>();
                bool started = false;
                var w = Writer("Throughput");
                if (o.Pid == 0) Reader("Latency", OnPong);
                Reader("Announcement", a =>
                {
                    lock (ann)
                    {
                        int n = a.BinData.Length;
                        if (n == Options.InitializeSize) { ann.Add(a.EntityId); finished.Remove(a.EntityId); }
                        else if (n == Options.FinishedSize) { finished.Add(a.EntityId); if (!started) ann.Remove(a.EntityId); }
                    }
                });
                Func<HashSet<int>, bool> all = set => { lock (ann) { for (int s = 0; s < o.NumSubscribers; s++) if (!set.Contains(s)) return false; return true; } };
                Progress("Waiting to discover " + o.NumSubscribers + " subscribers ...");
                if (!WaitUntil(() => w.PublicationMatchedStatus.CurrentCount >= o.NumSubscribers)) return;
                Progress("Waiting for subscribers announcement ...");
                if (!WaitUntil(() => all(ann))) return;
                var m = new TestData { EntityId = o.Pid, LatencyPing = 0, BinData = new byte[Options.InitializeSize] };
                if (o.Keyed)
                    for (long k = 0; k < o.Instances; k++) { SetKey(m, (uint)k); w.RegisterInstance(m); }
                long spb = batch > o.DataLen ? batch / o.DataLen : 1;
                long burst = batch > 0 ? Math.Max(Math.Max(o.SendQueueSize * spb, o.SendQueueSize), o.Instances) : Math.Max(o.SendQueueSize, o.Instances);
                lock (ann) { started = true; finished.Clear(); }
                Progress("Sending " + burst + " initialization pings ...");
                for (long k = 0; k < burst && !stop; k++) { SetKey(m, (uint)(k % o.Instances)); Write(w, m); }
                w.Flush();
                bool reliable = !o.BestEffort;
                if (reliable)
                {
                    var t = Stopwatch.StartNew();
                    while (!stop && t.Elapsed.TotalSeconds < 60 && !w.WaitForAcknowledgments(TimeSpan.FromMilliseconds(250))) { }
                }
                Thread.Sleep(1000);

                Progress("Sending data ...");
                var data = new TestData { EntityId = o.Pid, BinData = new byte[o.DataLen - Options.Overhead] };
                long lc = o.EffLatencyCount, numIter = o.EffNumIter, pings = 0;
                uint lastSeq = 0;
                bool timer = false;
                var start = Stopwatch.StartNew();
                for (long i = 0; i < numIter; i++)
                {
                    if (o.LatencyTest || (i & 15) == 0)
                    {
                        if (stop) break;
                        if (o.ExecutionTime > 0 && start.Elapsed.TotalSeconds >= o.ExecutionTime) { timer = true; break; }
                    }
                    uint seq = (uint)i;
                    data.SeqNum = seq;
                    SetKey(data, (uint)(i % o.Instances));
                    bool ping = o.Pid == 0 && IsPingSlot(i, spb, lc);
                    if (ping)
                    {
                        data.LatencyPing = (int)(pings % o.NumSubscribers);
                        pings++;
                        long us = ClockUs();
                        data.TimestampSec = (int)(uint)(us >> 32);
                        data.TimestampUsec = (uint)us;
                    }
                    else data.LatencyPing = -1;
                    Write(w, data);
                    lastSeq = seq;
                    if (ping && o.LatencyTest) WaitForPong(seq, reliable);
                }
                w.Flush();

                var fin = new TestData { EntityId = o.Pid, SeqNum = lastSeq, LatencyPing = -1, BinData = new byte[Options.FinishedSize] };
                SetKey(fin, Options.ControlInstance);
                for (int k = 0; k < 50; k++)
                {
                    if (k > 0 && all(finished)) break;
                    Write(w, fin);
                    w.Flush();
                    if (reliable) { w.WaitForAcknowledgments(TimeSpan.FromMilliseconds(100)); Thread.Sleep(10); }
                    else Thread.Sleep(100);
                    if (stop) break;
                }
                if (!all(finished) && !stop) Progress("Not every subscriber confirmed the end of the test.");

                if (o.Pid == 0)
                {
                    lock (latLock)
                    {
                        if (skew > 0) Progress("Clock skew suspected: " + skew + " pongs arrived before they were sent and were skipped.");
                        if (latCount > 0)
                        {
                            int n = Math.Min(latCount, latValues.Length);
                            if (o.LatencyFile != null) SaveLatencyFile(n);
                            Array.Sort(latValues, 0, n);
                            Func<long, long> at = idx => latValues[Math.Min(idx, n - 1)];
                            double ave = latSum / latCount;
                            printer.LatencySummary(current, ave, Math.Sqrt(Math.Max(0, latSumSq / latCount - ave * ave)), latMin, latMax,
                                at(n * 50L / 100), at(n * 90L / 100), at(n * 99L / 100), at((long)(n * 0.9999)), at((long)(n * 0.999999)));
                        }
                        else Progress("No latency pongs were received (no latency summary).");
                    }
                }
                printer.Finish();
                Progress(timer ? "Finishing test due to timer..." : "Finishing test...");
            }

            // ---- subscriber ----

            public void RunSubscriber()
            {
                var sync = new object();
                long packets = 0, bytes = 0, dataLen = 0, lastPackets = 0, lastBytes = 0, intervals = 0, lost = 0;
                double sumRate = 0, sumMbps = 0;
                var lastSeq = new long?[o.NumPublishers];
                var finishedPubs = new HashSet<int>();
                bool arrived = false, sizeChanged = false, end = false, summaryPrinted = false;
                var begin = new Stopwatch();
                var lastTime = new Stopwatch();
                // The writers exist before the reader's listener can call them.
                var latW = Writer("Latency");
                var annW = Writer("Announcement");
                var ctl = new TestData { EntityId = o.Sid, LatencyPing = -1, BinData = new byte[Options.InitializeSize] };
                var ctlFin = new TestData { EntityId = o.Sid, LatencyPing = -1, BinData = new byte[Options.FinishedSize] };
                SetKey(ctl, Options.ControlInstance);
                SetKey(ctlFin, Options.ControlInstance);
                Action<TestData> announce = c => { lock (ctl) { Write(annW, c); annW.Flush(); } };
                Action printSummary = () =>
                {
                    if (summaryPrinted) return;
                    summaryPrinted = true;
                    double dt = begin.Elapsed.TotalMilliseconds * 1000;
                    long rate = dt <= 0 || packets == 0 ? 0 : (long)(packets * 1e6 / dt);
                    double mbps = dt <= 0 || packets == 0 ? 0 : bytes * 1e6 / dt * 8 / 1e6;
                    if (packets == 0) Progress("No samples were received. Check that both sides use the same -domain, -dataLen (bounded vs. large type), -keyed and -bestEffort settings.");
                    printer.ThroughputSummary(dataLen == 0 ? o.DataLen : dataLen, packets, rate, mbps, lost, packets + lost == 0 ? 0 : lost * 100.0 / (packets + lost));
                };
                bool ended = false;
                var r = Reader("Throughput", m =>
                {
                    int size = m.BinData.Length;
                    if (size != Options.FinishedSize && ended) return;
                    if (size == Options.InitializeSize) { Write(latW, m); return; }
                    if (size == Options.LengthChangedSize) { Write(latW, m); return; }
                    if (size == Options.FinishedSize)
                    {
                        bool e;
                        lock (sync)
                        {
                            if (finishedPubs.Add(m.EntityId))
                            {
                                if (m.EntityId >= 0 && m.EntityId < lastSeq.Length && lastSeq[m.EntityId].HasValue)
                                {
                                    int gap = (int)(m.SeqNum - (uint)lastSeq[m.EntityId].Value);
                                    if (gap > 0) lost += gap;
                                }
                                if (finishedPubs.Count >= o.NumPublishers) { printSummary(); end = true; ended = true; }
                            }
                            e = end;
                        }
                        if (e) announce(ctlFin);
                        return;
                    }
                    long len = size + Options.Overhead;
                    lock (sync)
                    {
                        if (!begin.IsRunning || dataLen != len)
                        {
                            dataLen = len; packets = bytes = lastPackets = lastBytes = intervals = lost = 0; sumRate = sumMbps = 0;
                            for (int k = 0; k < lastSeq.Length; k++) lastSeq[k] = null;
                            begin.Restart(); lastTime.Restart();
                            sizeChanged = true;
                            printer.ThroughputHeader(len);
                        }
                        arrived = true;
                        packets++; bytes += len;
                        int id = m.EntityId;
                        if (id >= 0 && id < lastSeq.Length)
                        {
                            if (lastSeq[id].HasValue)
                            {
                                int gap = (int)(m.SeqNum - (uint)(lastSeq[id].Value + 1));
                                if (gap > 0) lost += gap;
                            }
                            lastSeq[id] = m.SeqNum;
                        }
                    }
                    if (m.LatencyPing == o.Sid) Write(latW, m);
                });
                Progress("Waiting to discover " + o.NumPublishers + " publishers ...");
                if (!WaitUntil(() => r.SubscriptionMatchedStatus.CurrentCount >= o.NumPublishers
                                     && latW.PublicationMatchedStatus.CurrentCount >= 1
                                     && annW.PublicationMatchedStatus.CurrentCount >= o.NumPublishers)) return;
                Progress("Waiting for data ...");
                var tick = Stopwatch.StartNew();
                long nextTick = 0;
                while (true)
                {
                    lock (sync) if (end) break;
                    if (stop) break;
                    if (tick.ElapsedMilliseconds >= nextTick)
                    {
                        nextTick += 1000;
                        bool a;
                        lock (sync) a = arrived;
                        if (!a) announce(ctl);
                        else
                        {
                            lock (sync)
                            {
                                if (sizeChanged) sizeChanged = false;
                                else
                                {
                                    double dt = lastTime.Elapsed.TotalMilliseconds * 1000;
                                    if (packets > 0 && dt > 0)
                                    {
                                        lastTime.Restart();
                                        double rate = (packets - lastPackets) * 1e6 / dt;
                                        double mbps = (bytes - lastBytes) * 1e6 / dt * 8 / 1e6;
                                        lastPackets = packets; lastBytes = bytes;
                                        intervals++; sumRate += rate; sumMbps += mbps;
                                        printer.ThroughputInterval(dataLen, packets, (long)rate, sumRate / intervals, mbps, sumMbps / intervals, lost,
                                            packets + lost == 0 ? 0 : lost * 100.0 / (packets + lost));
                                    }
                                }
                            }
                        }
                    }
                    Thread.Sleep(10);
                }
                bool wasEnded;
                lock (sync) wasEnded = end;
                if (wasEnded)
                {
                    // Let a late repeated FINISHED be confirmed.
                    var until = Stopwatch.StartNew();
                    while (until.ElapsedMilliseconds < 2000 && !stop) Thread.Sleep(20);
                }
                else lock (sync) printSummary();
                printer.Finish();
                Progress("Finishing test...");
            }
        }
    }
}
