// P/Invoke declarations of the FerroDDS C API (bindings/c/include/ferrodds.h).
// Layouts mirror the header's structs field for field (sequential, natural alignment).
using System;
using System.Runtime.InteropServices;

namespace FerroDds.Interop
{
    /// <summary>FerroddsParticipantConfig.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeParticipantConfig
    {
        public IntPtr Interface;
        public IntPtr Peers;
        public int Multicast;
        public int SharedMemory;
        public int ParticipantId;
        public int EnvOverrides;
    }

    /// <summary>FerroddsQos.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeQos
    {
        public int Reliability;
        public long MaxBlockingTimeNs;
        public int Durability;
        public int HistoryKind;
        public int HistoryDepth;
        public int MaxSamples;
        public int MaxInstances;
        public int MaxSamplesPerInstance;
        public int LivelinessKind;
        public long LivelinessLeaseNs;
        public int Ownership;
        public long DeadlineNs;
        public int Batching;
        public long BatchMaxBytes;
        public long BatchMaxSamples;
        public long BatchMaxFlushDelayNs;
        public long AsyncBytesPerSecond;
        public int PaceBestEffort;
        public IntPtr Partition;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal unsafe struct NativeMatchedStatus
    {
        public uint TotalCount;
        public int TotalCountChange;
        public uint CurrentCount;
        public int CurrentCountChange;
        public fixed byte LastHandle[16];
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeIncompatibleQosStatus
    {
        public uint TotalCount;
        public int TotalCountChange;
        public uint LastPolicyId;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeSampleLostStatus
    {
        public uint TotalCount;
        public int TotalCountChange;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal unsafe struct NativeInstanceHandle
    {
        public fixed byte Value[16];
    }

    [StructLayout(LayoutKind.Sequential)]
    internal unsafe struct NativeSampleInfo
    {
        public int SampleState;
        public int InstanceState;
        public int ValidData;
        public int HasSourceTimestamp;
        public long SourceTimestampNs;
        public fixed byte InstanceHandle[16];
        public fixed byte PublicationHandle[16];
        public long SequenceNumber;
    }

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void ReaderCallback(ulong reader, IntPtr user);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void ReaderMatchedCallback(ulong reader, IntPtr status, IntPtr user);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void WriterMatchedCallback(ulong writer, IntPtr status, IntPtr user);

    /// <summary>FerroddsReaderListener (function pointers as IntPtr from kept-alive delegates).</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeReaderListener
    {
        public IntPtr OnDataAvailable;
        public IntPtr OnSubscriptionMatched;
        public IntPtr OnRequestedIncompatibleQos;
        public IntPtr OnSampleLost;
        public IntPtr User;
    }

    /// <summary>FerroddsWriterListener.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeWriterListener
    {
        public IntPtr OnPublicationMatched;
        public IntPtr OnOfferedIncompatibleQos;
        public IntPtr User;
    }

    internal static unsafe class Native
    {
        private const string Lib = "ferrodds_c";

        [DllImport(Lib)] public static extern IntPtr ferrodds_last_error_message();
        [DllImport(Lib)] public static extern IntPtr ferrodds_retcode_name(int code);

        [DllImport(Lib)] public static extern int ferrodds_participant_config_default(out NativeParticipantConfig config);
        [DllImport(Lib)] public static extern int ferrodds_participant_config_loopback(out NativeParticipantConfig config);
        [DllImport(Lib)] public static extern int ferrodds_participant_create(uint domainId, ref NativeParticipantConfig config, out ulong participant);
        [DllImport(Lib)] public static extern int ferrodds_participant_delete(ulong participant);

        [DllImport(Lib)] public static extern int ferrodds_topic_create(ulong participant, [MarshalAs(UnmanagedType.LPStr)] string name, uint typeId, out ulong topic);
        [DllImport(Lib)] public static extern int ferrodds_topic_delete(ulong topic);

        [DllImport(Lib)] public static extern int ferrodds_qos_writer_default(out NativeQos qos);
        [DllImport(Lib)] public static extern int ferrodds_qos_reader_default(out NativeQos qos);

        [DllImport(Lib)] public static extern int ferrodds_writer_create(ulong participant, ulong topic, ref NativeQos qos, ref NativeWriterListener listener, out ulong writer);
        [DllImport(Lib)] public static extern int ferrodds_writer_delete(ulong writer);
        [DllImport(Lib)] public static extern int ferrodds_write(ulong writer, byte* data, UIntPtr len);
        [DllImport(Lib)] public static extern int ferrodds_write_with_timestamp(ulong writer, byte* data, UIntPtr len, long timestampNs);
        [DllImport(Lib)] public static extern int ferrodds_write_flush(ulong writer, byte* data, UIntPtr len);
        [DllImport(Lib)] public static extern int ferrodds_writer_flush(ulong writer);
        [DllImport(Lib)] public static extern int ferrodds_register_instance(ulong writer, byte* data, UIntPtr len, out NativeInstanceHandle handle);
        [DllImport(Lib)] public static extern int ferrodds_lookup_instance(ulong writer, byte* data, UIntPtr len, out NativeInstanceHandle handle);
        [DllImport(Lib)] public static extern int ferrodds_unregister_instance(ulong writer, byte* data, UIntPtr len);
        [DllImport(Lib)] public static extern int ferrodds_dispose(ulong writer, byte* data, UIntPtr len);
        [DllImport(Lib)] public static extern int ferrodds_writer_wait_for_acknowledgments(ulong writer, long timeoutNs);
        [DllImport(Lib)] public static extern int ferrodds_writer_wait_for_matched(ulong writer, uint count, long timeoutNs);
        [DllImport(Lib)] public static extern int ferrodds_writer_get_publication_matched_status(ulong writer, out NativeMatchedStatus status);

        [DllImport(Lib)] public static extern int ferrodds_reader_create(ulong participant, ulong topic, ref NativeQos qos, ref NativeReaderListener listener, out ulong reader);
        [DllImport(Lib)] public static extern int ferrodds_reader_delete(ulong reader);
        [DllImport(Lib)] public static extern int ferrodds_take(ulong reader, byte* buf, UIntPtr capacity, out UIntPtr len, out NativeSampleInfo info);
        [DllImport(Lib)] public static extern int ferrodds_reader_wait_for_data(ulong reader, long timeoutNs);
        [DllImport(Lib)] public static extern int ferrodds_reader_wait_for_matched(ulong reader, uint count, long timeoutNs);
        [DllImport(Lib)] public static extern int ferrodds_reader_get_subscription_matched_status(ulong reader, out NativeMatchedStatus status);
        [DllImport(Lib)] public static extern int ferrodds_reader_get_sample_lost_status(ulong reader, out NativeSampleLostStatus status);
        [DllImport(Lib)] public static extern int ferrodds_reader_get_invalid_sample_count(ulong reader, out ulong count);
        [DllImport(Lib)] public static extern int ferrodds_reader_set_listener(ulong reader, ref NativeReaderListener listener);

        [DllImport(Lib)] public static extern int ferrodds_waitset_create(out ulong waitset);
        [DllImport(Lib)] public static extern int ferrodds_waitset_delete(ulong waitset);
        [DllImport(Lib)] public static extern int ferrodds_waitset_attach_reader(ulong waitset, ulong reader, UIntPtr token);
        [DllImport(Lib)] public static extern int ferrodds_waitset_attach_status(ulong waitset, ulong entity, uint mask, UIntPtr token);
        [DllImport(Lib)] public static extern int ferrodds_waitset_attach_guard(ulong waitset, ulong guard, UIntPtr token);
        [DllImport(Lib)] public static extern int ferrodds_waitset_detach(ulong waitset, ulong entity);
        [DllImport(Lib)] public static extern int ferrodds_waitset_wait(ulong waitset, long timeoutNs, UIntPtr* tokens, UIntPtr capacity, out UIntPtr count);
        [DllImport(Lib)] public static extern int ferrodds_guard_condition_create(out ulong guard);
        [DllImport(Lib)] public static extern int ferrodds_guard_condition_set(ulong guard, int triggered);
        [DllImport(Lib)] public static extern int ferrodds_guard_condition_delete(ulong guard);
    }
}
