// Entities over the C API: DomainParticipant, Topic<T>, DataWriter<T>, DataReader<T>,
// WaitSet, GuardCondition. Every entity is IDisposable (Dispose deletes it; a disposed
// entity used again throws AlreadyDeletedException, the C API's verdict on a deleted handle).
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;
using FerroDds.Interop;

namespace FerroDds
{
    internal static class Time
    {
        /// <summary>TimeSpan to the C API's nanoseconds; negative (Timeout.InfiniteTimeSpan) is infinite.</summary>
        public static long Ns(TimeSpan t)
        {
            if (t < TimeSpan.Zero || t == TimeSpan.MaxValue) return -1;
            return t.Ticks * 100;
        }
    }

    /// <summary>How a participant is configured (FerroddsParticipantConfig).</summary>
    public sealed class ParticipantConfig
    {
        /// <summary>Interface name or IPv4 address for discovery and data; null: the default interface.</summary>
        public string Interface;
        /// <summary>Comma-separated IPv4 unicast discovery peers; null: none.</summary>
        public string Peers;
        /// <summary>Multicast discovery: 1 on, 0 off, -1 the default (on).</summary>
        public int Multicast = -1;
        /// <summary>Shared-memory transport: 1 on, 0 off, -1 the default.</summary>
        public int SharedMemory = -1;
        /// <summary>Participant id (selects the unicast ports); -1: the first free one.</summary>
        public int ParticipantId = -1;
        /// <summary>Applies the FERRODDS_INTERFACE, FERRODDS_PEERS, FERRODDS_MULTICAST and FERRODDS_CONGESTION_CONTROL environment variables on top.</summary>
        public bool EnvironmentOverrides;

        /// <summary>The defaults: default interface, multicast discovery, environment overrides applied.</summary>
        public static ParticipantConfig Default()
        {
            return new ParticipantConfig { EnvironmentOverrides = true };
        }

        /// <summary>Loopback only: interface and peer 127.0.0.1, multicast off (what tests use).</summary>
        public static ParticipantConfig Loopback()
        {
            return new ParticipantConfig { Interface = "127.0.0.1", Peers = "127.0.0.1", Multicast = 0 };
        }
    }

    /// <summary>QoS of a writer or a reader (FerroddsQos): every policy the Rust API has.</summary>
    public sealed class Qos
    {
        internal NativeQos N;
        /// <summary>PARTITION: one partition name; null: the default partition.</summary>
        public string Partition;

        private Qos(NativeQos n) { N = n; }

        /// <summary>Writer defaults: RELIABLE (100 ms max blocking), VOLATILE, KEEP_LAST 1, synchronous.</summary>
        public static Qos WriterDefault()
        {
            NativeQos n;
            Check.Rc(Native.ferrodds_qos_writer_default(out n));
            return new Qos(n);
        }

        /// <summary>Reader defaults: BEST_EFFORT, VOLATILE, KEEP_LAST 1.</summary>
        public static Qos ReaderDefault()
        {
            NativeQos n;
            Check.Rc(Native.ferrodds_qos_reader_default(out n));
            return new Qos(n);
        }

        /// <summary>RELIABILITY RELIABLE.</summary>
        public Qos Reliable() { N.Reliability = 1; return this; }
        /// <summary>RELIABILITY BEST_EFFORT.</summary>
        public Qos BestEffort() { N.Reliability = 0; return this; }
        /// <summary>HISTORY KEEP_ALL.</summary>
        public Qos KeepAll() { N.HistoryKind = 1; return this; }
        /// <summary>HISTORY KEEP_LAST depth.</summary>
        public Qos KeepLast(int depth) { N.HistoryKind = 0; N.HistoryDepth = depth; return this; }
        /// <summary>DURABILITY TRANSIENT_LOCAL.</summary>
        public Qos TransientLocal() { N.Durability = 1; return this; }
        /// <summary>How long a KEEP_ALL writer blocks while its history is full.</summary>
        public Qos MaxBlockingTime(TimeSpan t) { N.MaxBlockingTimeNs = Time.Ns(t); return this; }
        /// <summary>RESOURCE_LIMITS (-1: unlimited).</summary>
        public Qos ResourceLimits(int maxSamples, int maxInstances, int maxSamplesPerInstance)
        {
            N.MaxSamples = maxSamples; N.MaxInstances = maxInstances; N.MaxSamplesPerInstance = maxSamplesPerInstance;
            return this;
        }
        /// <summary>OWNERSHIP EXCLUSIVE.</summary>
        public Qos ExclusiveOwnership() { N.Ownership = 1; return this; }
        /// <summary>DEADLINE period.</summary>
        public Qos Deadline(TimeSpan period) { N.DeadlineNs = Time.Ns(period); return this; }
        /// <summary>LIVELINESS kind (0 automatic, 1 manual by participant, 2 manual by topic) and lease.</summary>
        public Qos Liveliness(int kind, TimeSpan lease) { N.LivelinessKind = kind; N.LivelinessLeaseNs = Time.Ns(lease); return this; }
        /// <summary>Writer batching: a batch is sent at maxBytes, maxSamples (0: no limit) or after flushDelay.</summary>
        public Qos Batching(long maxBytes, long maxSamples, TimeSpan flushDelay)
        {
            N.Batching = 1; N.BatchMaxBytes = maxBytes; N.BatchMaxSamples = maxSamples; N.BatchMaxFlushDelayNs = Time.Ns(flushDelay);
            return this;
        }
        /// <summary>Writer batching of up to maxBytes payload bytes (the other batching limits keep their defaults).</summary>
        public Qos BatchBytes(long maxBytes) { N.Batching = 1; N.BatchMaxBytes = maxBytes; return this; }
        /// <summary>Writer: asynchronous publishing paced at about this many bytes per second (0: synchronous).</summary>
        public Qos AsyncPublishing(long bytesPerSecond) { N.AsyncBytesPerSecond = bytesPerSecond; return this; }
        /// <summary>Writer (best effort): follow the rate congestion control measured.</summary>
        public Qos PaceBestEffort(bool on) { N.PaceBestEffort = on ? 1 : 0; return this; }

        /// <summary>Calls f with the native QoS, the partition string pinned for the call.</summary>
        internal int With(Func<NativeQos, int> f)
        {
            IntPtr p = Partition == null ? IntPtr.Zero : Marshal.StringToHGlobalAnsi(Partition);
            try
            {
                var n = N;
                n.Partition = p;
                return f(n);
            }
            finally
            {
                if (p != IntPtr.Zero) Marshal.FreeHGlobal(p);
            }
        }
    }

    /// <summary>An instance: its 16-byte key hash (all zeros: nil).</summary>
    public struct InstanceHandle : IEquatable<InstanceHandle>
    {
        /// <summary>First 8 bytes of the key hash (little-endian).</summary>
        public ulong Low;
        /// <summary>Last 8 bytes of the key hash (little-endian).</summary>
        public ulong High;
        /// <summary>True for the nil handle.</summary>
        public bool IsNil { get { return Low == 0 && High == 0; } }
        internal static unsafe InstanceHandle From(byte* p)
        {
            return new InstanceHandle { Low = *(ulong*)p, High = *(ulong*)(p + 8) };
        }
        /// <summary>Equal key hashes.</summary>
        public bool Equals(InstanceHandle o) { return Low == o.Low && High == o.High; }
        /// <summary>Equal key hashes.</summary>
        public override bool Equals(object o) { return o is InstanceHandle && Equals((InstanceHandle)o); }
        /// <summary>Hash of the key hash.</summary>
        public override int GetHashCode() { return (Low ^ High).GetHashCode(); }
    }

    /// <summary>Metadata of a taken sample.</summary>
    public struct SampleInfo
    {
        /// <summary>True: the sample carries data; false: a dispose/unregister notification.</summary>
        public bool ValidData;
        /// <summary>FERRODDS_SAMPLE_STATE_*: 1 read, 2 not read.</summary>
        public int SampleState;
        /// <summary>FERRODDS_INSTANCE_STATE_*: 1 alive, 2 disposed, 4 no writers.</summary>
        public int InstanceState;
        /// <summary>The writer's timestamp, nanoseconds since the Unix epoch (0 when none).</summary>
        public long SourceTimestampNs;
        /// <summary>The writer's sequence number of the sample.</summary>
        public long SequenceNumber;
        /// <summary>The instance.</summary>
        public InstanceHandle Instance;
    }

    /// <summary>PUBLICATION_ or SUBSCRIPTION_MATCHED status.</summary>
    public struct MatchedStatus
    {
        /// <summary>Peers ever matched.</summary>
        public uint TotalCount;
        /// <summary>Change of TotalCount since last read.</summary>
        public int TotalCountChange;
        /// <summary>Peers matched now.</summary>
        public uint CurrentCount;
        /// <summary>Change of CurrentCount since last read.</summary>
        public int CurrentCountChange;
        internal static MatchedStatus From(ref NativeMatchedStatus n)
        {
            return new MatchedStatus { TotalCount = n.TotalCount, TotalCountChange = n.TotalCountChange, CurrentCount = n.CurrentCount, CurrentCountChange = n.CurrentCountChange };
        }
    }

    /// <summary>Status bits for WaitSet.AttachStatus.</summary>
    [Flags]
    public enum StatusMask : uint
    {
        /// <summary>OFFERED_INCOMPATIBLE_QOS (writer).</summary>
        OfferedIncompatibleQos = 1 << 5,
        /// <summary>REQUESTED_INCOMPATIBLE_QOS (reader).</summary>
        RequestedIncompatibleQos = 1 << 6,
        /// <summary>SAMPLE_LOST (reader).</summary>
        SampleLost = 1 << 7,
        /// <summary>DATA_AVAILABLE (reader).</summary>
        DataAvailable = 1 << 10,
        /// <summary>PUBLICATION_MATCHED (writer).</summary>
        PublicationMatched = 1 << 13,
        /// <summary>SUBSCRIPTION_MATCHED (reader).</summary>
        SubscriptionMatched = 1 << 14,
    }

    /// <summary>Base of the entities: a C API handle, deleted by Dispose.</summary>
    public abstract class Entity : IDisposable
    {
        /// <summary>The C API handle (kept after Dispose: the API then reports it deleted).</summary>
        public ulong Handle { get; protected set; }
        private int disposed;

        /// <summary>True once Dispose ran.</summary>
        public bool IsDisposed { get { return disposed != 0; } }

        /// <summary>Deletes the entity (idempotent). Throws when the C API refuses (e.g. from a listener callback).</summary>
        public void Dispose()
        {
            if (Interlocked.Exchange(ref disposed, 1) != 0) return;
            int rc = Delete();
            // A child deleted by its participant's disposal is already gone: not an error.
            if (rc != Check.Ok && rc != 9)
            {
                // Refused (e.g. a participant deleted from its own listener): still usable.
                Interlocked.Exchange(ref disposed, 0);
                throw Check.Exception(rc);
            }
            Released();
        }

        /// <summary>Calls the C API delete function.</summary>
        protected abstract int Delete();

        /// <summary>Frees managed resources tied to the handle (after it is deleted).</summary>
        internal virtual void Released() { }
    }

    /// <summary>Entry point: a participant in a DDS domain.</summary>
    public sealed class DomainParticipant : Entity
    {
        private readonly List<Entity> children = new List<Entity>();

        /// <summary>Raised with every exception a listener callback threw (the callback's thread goes on; the exception does not reach native code).</summary>
        public static event Action<Exception> ListenerException;

        internal static void ReportListenerException(Exception e)
        {
            var h = ListenerException;
            if (h == null) return;
            try { h(e); } catch (Exception) { /* a failing handler must not unwind into native code */ }
        }

        /// <summary>Creates a participant in <paramref name="domainId"/>; config null: the defaults with environment overrides.</summary>
        public DomainParticipant(uint domainId, ParticipantConfig config = null)
        {
            config = config ?? ParticipantConfig.Default();
            NativeParticipantConfig n;
            Check.Rc(Native.ferrodds_participant_config_default(out n));
            IntPtr iface = config.Interface == null ? IntPtr.Zero : Marshal.StringToHGlobalAnsi(config.Interface);
            IntPtr peers = config.Peers == null ? IntPtr.Zero : Marshal.StringToHGlobalAnsi(config.Peers);
            try
            {
                n.Interface = iface;
                n.Peers = peers;
                n.Multicast = config.Multicast;
                n.SharedMemory = config.SharedMemory;
                n.ParticipantId = config.ParticipantId;
                n.EnvOverrides = config.EnvironmentOverrides ? 1 : 0;
                ulong h;
                Check.Rc(Native.ferrodds_participant_create(domainId, ref n, out h));
                Handle = h;
            }
            finally
            {
                if (iface != IntPtr.Zero) Marshal.FreeHGlobal(iface);
                if (peers != IntPtr.Zero) Marshal.FreeHGlobal(peers);
            }
        }

        /// <summary>Creates (or finds) the topic <paramref name="name"/> of type T.</summary>
        public Topic<T> CreateTopic<T>(string name, ITopicType<T> type) where T : class
        {
            if (name == null) throw new ArgumentNullException("name");
            if (type == null) throw new ArgumentNullException("type");
            ulong h;
            Check.Rc(Native.ferrodds_topic_create(Handle, name, type.TypeSupport, out h));
            return new Topic<T>(h, name, type);
        }

        /// <summary>Creates a writer; qos null: the writer defaults; listener installed before it can match.</summary>
        public DataWriter<T> CreateWriter<T>(Topic<T> topic, Qos qos = null, IDataWriterListener<T> listener = null) where T : class
        {
            if (topic == null) throw new ArgumentNullException("topic");
            var w = new DataWriter<T>(this, topic, qos ?? Qos.WriterDefault(), listener);
            lock (children) children.Add(w);
            return w;
        }

        /// <summary>Creates a reader; qos null: the reader defaults; listener installed before it can match.</summary>
        public DataReader<T> CreateReader<T>(Topic<T> topic, Qos qos = null, IDataReaderListener<T> listener = null) where T : class
        {
            if (topic == null) throw new ArgumentNullException("topic");
            var r = new DataReader<T>(this, topic, qos ?? Qos.ReaderDefault(), listener);
            lock (children) children.Add(r);
            return r;
        }

        /// <summary>Deletes the participant and every topic, writer and reader created in it.</summary>
        protected override int Delete() { return Native.ferrodds_participant_delete(Handle); }

        internal override void Released()
        {
            Entity[] all;
            lock (children) { all = children.ToArray(); children.Clear(); }
            foreach (var c in all) c.Released();
        }
    }

    /// <summary>A topic: a name and a type.</summary>
    public sealed class Topic<T> : Entity where T : class
    {
        /// <summary>The topic name.</summary>
        public string Name { get; private set; }
        /// <summary>The type support.</summary>
        public ITopicType<T> Type { get; private set; }
        internal Topic(ulong h, string name, ITopicType<T> type) { Handle = h; Name = name; Type = type; }
        /// <summary>Deletes the topic handle (writers and readers on it keep working).</summary>
        protected override int Delete() { return Native.ferrodds_topic_delete(Handle); }
    }

    /// <summary>Callbacks of a writer; they run on a participant thread. Exceptions are caught and reported through DomainParticipant.ListenerException.</summary>
    public interface IDataWriterListener<T> where T : class
    {
        /// <summary>The set of matched readers changed.</summary>
        void OnPublicationMatched(DataWriter<T> writer, MatchedStatus status);
    }

    /// <summary>Callbacks of a reader; they run on a participant thread. Exceptions are caught and reported through DomainParticipant.ListenerException.</summary>
    public interface IDataReaderListener<T> where T : class
    {
        /// <summary>New samples can be taken.</summary>
        void OnDataAvailable(DataReader<T> reader);
        /// <summary>The set of matched writers changed.</summary>
        void OnSubscriptionMatched(DataReader<T> reader, MatchedStatus status);
    }

    /// <summary>Dispatch of native callbacks to entities (delegates kept alive for the process).</summary>
    internal static class Callbacks
    {
        internal interface IReaderTarget { void DataAvailable(); void Matched(MatchedStatus s); }
        internal interface IWriterTarget { void Matched(MatchedStatus s); }

        private static readonly ReaderCallback dataAvailable = OnDataAvailable;
        private static readonly ReaderMatchedCallback subMatched = OnSubscriptionMatched;
        private static readonly WriterMatchedCallback pubMatched = OnPublicationMatched;
        public static readonly IntPtr DataAvailablePtr = Marshal.GetFunctionPointerForDelegate(dataAvailable);
        public static readonly IntPtr SubMatchedPtr = Marshal.GetFunctionPointerForDelegate(subMatched);
        public static readonly IntPtr PubMatchedPtr = Marshal.GetFunctionPointerForDelegate(pubMatched);

        private static object Target(IntPtr user)
        {
            return user == IntPtr.Zero ? null : GCHandle.FromIntPtr(user).Target;
        }

        private static void OnDataAvailable(ulong reader, IntPtr user)
        {
            try { var t = Target(user) as IReaderTarget; if (t != null) t.DataAvailable(); }
            catch (Exception e) { DomainParticipant.ReportListenerException(e); }
        }

        private static void OnSubscriptionMatched(ulong reader, IntPtr status, IntPtr user)
        {
            try
            {
                var n = (NativeMatchedStatus)Marshal.PtrToStructure(status, typeof(NativeMatchedStatus));
                var t = Target(user) as IReaderTarget;
                if (t != null) t.Matched(MatchedStatus.From(ref n));
            }
            catch (Exception e) { DomainParticipant.ReportListenerException(e); }
        }

        private static void OnPublicationMatched(ulong writer, IntPtr status, IntPtr user)
        {
            try
            {
                var n = (NativeMatchedStatus)Marshal.PtrToStructure(status, typeof(NativeMatchedStatus));
                var t = Target(user) as IWriterTarget;
                if (t != null) t.Matched(MatchedStatus.From(ref n));
            }
            catch (Exception e) { DomainParticipant.ReportListenerException(e); }
        }
    }

    /// <summary>Writes samples of T (serialized into a pooled buffer: no allocation per write once the buffer fits).</summary>
    public sealed class DataWriter<T> : Entity, Callbacks.IWriterTarget where T : class
    {
        private readonly ITopicType<T> type;
        private readonly object sync = new object();
        private byte[] buf = new byte[256];
        private GCHandle self;
        private readonly IDataWriterListener<T> listener;

        /// <summary>The topic written.</summary>
        public Topic<T> Topic { get; private set; }

        internal DataWriter(DomainParticipant p, Topic<T> topic, Qos qos, IDataWriterListener<T> listener)
        {
            Topic = topic;
            type = topic.Type;
            this.listener = listener;
            var l = new NativeWriterListener();
            if (listener != null)
            {
                self = GCHandle.Alloc(this);
                l.OnPublicationMatched = Callbacks.PubMatchedPtr;
                l.User = GCHandle.ToIntPtr(self);
            }
            ulong h = 0;
            int rc = qos.With(n => Native.ferrodds_writer_create(p.Handle, topic.Handle, ref n, ref l, out h));
            if (rc != Check.Ok)
            {
                var e = Check.Exception(rc);
                if (self.IsAllocated) self.Free();
                throw e;
            }
            Handle = h;
        }

        void Callbacks.IWriterTarget.Matched(MatchedStatus s) { if (listener != null) listener.OnPublicationMatched(this, s); }

        private int Serialize(T sample)
        {
            if (sample == null) throw new ArgumentNullException("sample");
            int max = type.MaxSerializedSize(sample);
            if (buf.Length < max) buf = new byte[Math.Max(max, buf.Length * 2)];
            return type.Serialize(sample, buf);
        }

        private unsafe delegate int Op(ulong w, byte* p, UIntPtr n);

        /// <summary>Writes one sample (checked against the type's bounds by the C API).</summary>
        public unsafe void Write(T sample)
        {
            lock (sync)
            {
                int n = Serialize(sample);
                fixed (byte* p = buf) Check.Rc(Native.ferrodds_write(Handle, p, (UIntPtr)n));
            }
        }

        /// <summary>Writes one sample with a source timestamp (nanoseconds since the Unix epoch).</summary>
        public unsafe void Write(T sample, long timestampNs)
        {
            lock (sync)
            {
                int n = Serialize(sample);
                fixed (byte* p = buf) Check.Rc(Native.ferrodds_write_with_timestamp(Handle, p, (UIntPtr)n, timestampNs));
            }
        }

        /// <summary>Writes one sample, then sends whatever batching holds.</summary>
        public unsafe void WriteFlush(T sample)
        {
            lock (sync)
            {
                int n = Serialize(sample);
                fixed (byte* p = buf) Check.Rc(Native.ferrodds_write_flush(Handle, p, (UIntPtr)n));
            }
        }

        /// <summary>Sends every sample batching holds now.</summary>
        public void Flush() { Check.Rc(Native.ferrodds_writer_flush(Handle)); }

        /// <summary>Registers the instance of the sample's key.</summary>
        public unsafe InstanceHandle RegisterInstance(T sample)
        {
            lock (sync)
            {
                int n = Serialize(sample);
                NativeInstanceHandle h;
                fixed (byte* p = buf) Check.Rc(Native.ferrodds_register_instance(Handle, p, (UIntPtr)n, out h));
                return InstanceHandle.From(h.Value);
            }
        }

        /// <summary>The handle of the sample's instance if the writer knows it, else nil.</summary>
        public unsafe InstanceHandle LookupInstance(T sample)
        {
            lock (sync)
            {
                int n = Serialize(sample);
                NativeInstanceHandle h;
                fixed (byte* p = buf) Check.Rc(Native.ferrodds_lookup_instance(Handle, p, (UIntPtr)n, out h));
                return InstanceHandle.From(h.Value);
            }
        }

        /// <summary>Unregisters the sample's instance.</summary>
        public unsafe void UnregisterInstance(T sample)
        {
            lock (sync)
            {
                int n = Serialize(sample);
                fixed (byte* p = buf) Check.Rc(Native.ferrodds_unregister_instance(Handle, p, (UIntPtr)n));
            }
        }

        /// <summary>Disposes the sample's instance (keyed types only).</summary>
        public unsafe void DisposeInstance(T sample)
        {
            lock (sync)
            {
                int n = Serialize(sample);
                fixed (byte* p = buf) Check.Rc(Native.ferrodds_dispose(Handle, p, (UIntPtr)n));
            }
        }

        /// <summary>Waits until at least count readers match; false on timeout.</summary>
        public bool WaitForMatched(int count, TimeSpan timeout)
        {
            int rc = Native.ferrodds_writer_wait_for_matched(Handle, (uint)count, Time.Ns(timeout));
            if (rc == Check.Timeout) return false;
            Check.Rc(rc);
            return true;
        }

        /// <summary>Waits until every matched reliable reader acknowledged everything; false on timeout.</summary>
        public bool WaitForAcknowledgments(TimeSpan timeout)
        {
            int rc = Native.ferrodds_writer_wait_for_acknowledgments(Handle, Time.Ns(timeout));
            if (rc == Check.Timeout) return false;
            Check.Rc(rc);
            return true;
        }

        /// <summary>PUBLICATION_MATCHED status (reading resets its change counts).</summary>
        public MatchedStatus PublicationMatchedStatus
        {
            get
            {
                NativeMatchedStatus n;
                Check.Rc(Native.ferrodds_writer_get_publication_matched_status(Handle, out n));
                return MatchedStatus.From(ref n);
            }
        }

        /// <summary>Deletes the writer.</summary>
        protected override int Delete() { return Native.ferrodds_writer_delete(Handle); }

        internal override void Released() { lock (sync) { if (self.IsAllocated) self.Free(); } }
    }

    /// <summary>Takes samples of T (into a pooled buffer; deserialized into the caller's reused object).</summary>
    public sealed class DataReader<T> : Entity, Callbacks.IReaderTarget where T : class
    {
        private readonly ITopicType<T> type;
        private readonly object sync = new object();
        private byte[] buf = new byte[256];
        private GCHandle self;
        private readonly IDataReaderListener<T> listener;

        /// <summary>The topic read.</summary>
        public Topic<T> Topic { get; private set; }

        internal DataReader(DomainParticipant p, Topic<T> topic, Qos qos, IDataReaderListener<T> listener)
        {
            Topic = topic;
            type = topic.Type;
            this.listener = listener;
            var l = new NativeReaderListener();
            if (listener != null)
            {
                self = GCHandle.Alloc(this);
                l.OnDataAvailable = Callbacks.DataAvailablePtr;
                l.OnSubscriptionMatched = Callbacks.SubMatchedPtr;
                l.User = GCHandle.ToIntPtr(self);
            }
            ulong h = 0;
            int rc = qos.With(n => Native.ferrodds_reader_create(p.Handle, topic.Handle, ref n, ref l, out h));
            if (rc != Check.Ok)
            {
                var e = Check.Exception(rc);
                if (self.IsAllocated) self.Free();
                throw e;
            }
            Handle = h;
        }

        void Callbacks.IReaderTarget.DataAvailable() { if (listener != null) listener.OnDataAvailable(this); }
        void Callbacks.IReaderTarget.Matched(MatchedStatus s) { if (listener != null) listener.OnSubscriptionMatched(this, s); }

        /// <summary>
        /// Takes the oldest sample: false when there is none. <paramref name="sample"/> is
        /// reused when not null (no allocation when its arrays fit); for an invalid-data
        /// sample (dispose/unregister) it is left as it was and info.ValidData is false.
        /// </summary>
        public unsafe bool Take(ref T sample, out SampleInfo info)
        {
            lock (sync)
            {
                NativeSampleInfo ni;
                UIntPtr len;
                int rc;
                while (true)
                {
                    fixed (byte* p = buf) rc = Native.ferrodds_take(Handle, p, (UIntPtr)buf.Length, out len, out ni);
                    if (rc != Check.BufferTooSmall) break;
                    buf = new byte[Math.Max((int)len, buf.Length * 2)];
                }
                if (rc == Check.NoData) { info = default(SampleInfo); return false; }
                Check.Rc(rc);
                info = new SampleInfo
                {
                    ValidData = ni.ValidData != 0,
                    SampleState = ni.SampleState,
                    InstanceState = ni.InstanceState,
                    SourceTimestampNs = ni.HasSourceTimestamp != 0 ? ni.SourceTimestampNs : 0,
                    SequenceNumber = ni.SequenceNumber,
                    Instance = InstanceHandle.From(ni.InstanceHandle),
                };
                if (info.ValidData) sample = type.Deserialize(buf, (int)len, sample);
                return true;
            }
        }

        /// <summary>Takes the oldest valid sample into a new object, or null when there is none (invalid-data samples are skipped).</summary>
        public T Take()
        {
            T s = null;
            SampleInfo info;
            while (Take(ref s, out info)) if (info.ValidData) return s;
            return null;
        }

        /// <summary>Waits until the reader has a sample not read yet; false on timeout.</summary>
        public bool WaitForData(TimeSpan timeout)
        {
            int rc = Native.ferrodds_reader_wait_for_data(Handle, Time.Ns(timeout));
            if (rc == Check.Timeout) return false;
            Check.Rc(rc);
            return true;
        }

        /// <summary>Waits until at least count writers match; false on timeout.</summary>
        public bool WaitForMatched(int count, TimeSpan timeout)
        {
            int rc = Native.ferrodds_reader_wait_for_matched(Handle, (uint)count, Time.Ns(timeout));
            if (rc == Check.Timeout) return false;
            Check.Rc(rc);
            return true;
        }

        /// <summary>SUBSCRIPTION_MATCHED status (reading resets its change counts).</summary>
        public MatchedStatus SubscriptionMatchedStatus
        {
            get
            {
                NativeMatchedStatus n;
                Check.Rc(Native.ferrodds_reader_get_subscription_matched_status(Handle, out n));
                return MatchedStatus.From(ref n);
            }
        }

        /// <summary>Samples lost in total.</summary>
        public uint SampleLostCount
        {
            get
            {
                NativeSampleLostStatus n;
                Check.Rc(Native.ferrodds_reader_get_sample_lost_status(Handle, out n));
                return n.TotalCount;
            }
        }

        /// <summary>Received samples dropped because their bytes were not a valid sample of the type.</summary>
        public ulong InvalidSampleCount
        {
            get
            {
                ulong n;
                Check.Rc(Native.ferrodds_reader_get_invalid_sample_count(Handle, out n));
                return n;
            }
        }

        /// <summary>Deletes the reader.</summary>
        protected override int Delete() { return Native.ferrodds_reader_delete(Handle); }

        internal override void Released() { lock (sync) { if (self.IsAllocated) self.Free(); } }
    }

    /// <summary>A condition triggered by the application.</summary>
    public sealed class GuardCondition : Entity
    {
        /// <summary>Creates a guard condition (not triggered).</summary>
        public GuardCondition()
        {
            ulong h;
            Check.Rc(Native.ferrodds_guard_condition_create(out h));
            Handle = h;
        }

        /// <summary>Sets the trigger value (true wakes the wait sets it is attached to).</summary>
        public void Trigger(bool value) { Check.Rc(Native.ferrodds_guard_condition_set(Handle, value ? 1 : 0)); }

        /// <summary>Deletes the guard condition.</summary>
        protected override int Delete() { return Native.ferrodds_guard_condition_delete(Handle); }
    }

    /// <summary>Blocks until one of its conditions triggers; each condition reports the caller's token.</summary>
    public sealed class WaitSet : Entity
    {
        /// <summary>Creates an empty wait set.</summary>
        public WaitSet()
        {
            ulong h;
            Check.Rc(Native.ferrodds_waitset_create(out h));
            Handle = h;
        }

        /// <summary>Attaches the read condition of a reader (triggered while it has unread samples).</summary>
        public void AttachReadCondition(Entity reader, int token)
        {
            Check.Rc(Native.ferrodds_waitset_attach_reader(Handle, reader.Handle, (UIntPtr)(uint)token));
        }

        /// <summary>Attaches the status condition of a writer or reader with the enabled statuses.</summary>
        public void AttachStatus(Entity entity, StatusMask mask, int token)
        {
            Check.Rc(Native.ferrodds_waitset_attach_status(Handle, entity.Handle, (uint)mask, (UIntPtr)(uint)token));
        }

        /// <summary>Attaches a guard condition.</summary>
        public void AttachGuard(GuardCondition guard, int token)
        {
            Check.Rc(Native.ferrodds_waitset_attach_guard(Handle, guard.Handle, (UIntPtr)(uint)token));
        }

        /// <summary>Detaches every condition attached for the entity.</summary>
        public void Detach(Entity entity) { Check.Rc(Native.ferrodds_waitset_detach(Handle, entity.Handle)); }

        /// <summary>
        /// Waits until a condition triggers: stores the triggered tokens into
        /// <paramref name="tokens"/> (as many as fit) and returns how many triggered; 0 on timeout.
        /// </summary>
        public unsafe int Wait(TimeSpan timeout, int[] tokens)
        {
            int cap = tokens == null ? 0 : Math.Min(tokens.Length, 64);
            UIntPtr* t = stackalloc UIntPtr[64];
            UIntPtr count;
            int rc = Native.ferrodds_waitset_wait(Handle, Time.Ns(timeout), t, (UIntPtr)cap, out count);
            if (rc == Check.Timeout) return 0;
            Check.Rc(rc);
            int n = (int)count;
            for (int i = 0; i < Math.Min(n, cap); i++) tokens[i] = (int)t[i];
            return n;
        }

        /// <summary>Deletes the wait set.</summary>
        protected override int Delete() { return Native.ferrodds_waitset_delete(Handle); }
    }
}
