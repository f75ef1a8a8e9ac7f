// Topic types: the ITopicType<T> contract and the two shipped types (ShapeType and the
// perftest TestData_t family), serialized by hand as the Rust CDR does (XCDR1 little-endian
// out; XCDR1/XCDR2 of either byte order in).
using System;
using System.Text;

namespace FerroDds
{
    /// <summary>
    /// How samples of T become serialized CDR (the 4-byte encapsulation header and the body)
    /// and back. Implementations are stateless and thread-safe.
    /// </summary>
    public interface ITopicType<T>
    {
        /// <summary>The C API type support (FERRODDS_TYPE_*) that validates and keys the bytes.</summary>
        uint TypeSupport { get; }

        /// <summary>The DDS type name.</summary>
        string TypeName { get; }

        /// <summary>An upper bound of the serialized size of <paramref name="sample"/> (header included).</summary>
        int MaxSerializedSize(T sample);

        /// <summary>
        /// Writes the encapsulation header (XCDR1 little-endian) and the body into
        /// <paramref name="buffer"/> from index 0 (at least MaxSerializedSize bytes long);
        /// returns the number of bytes written.
        /// </summary>
        int Serialize(T sample, byte[] buffer);

        /// <summary>
        /// Reads one sample from <paramref name="length"/> bytes of <paramref name="data"/>
        /// (header included). <paramref name="reuse"/>, when not null, may be filled and
        /// returned instead of a new object (no allocation when its arrays fit).
        /// Throws <see cref="SerializationException"/> on malformed bytes.
        /// </summary>
        T Deserialize(byte[] data, int length, T reuse);
    }

    /// <summary>Reads a CDR body (alignment relative to the body's start, after the header).</summary>
    public struct CdrReader
    {
        private readonly byte[] data;
        private readonly int end;
        private readonly bool bigEndian;
        private int pos;

        /// <summary>Starts after the 4-byte encapsulation header, which selects byte order and XCDR version.</summary>
        public CdrReader(byte[] data, int length)
        {
            if (length < 4 || length > data.Length) throw Bad("shorter than its 4-byte encapsulation header", length);
            this.data = data;
            end = length;
            pos = 4;
            if (data[0] != 0) throw Bad("unknown encapsulation 0x" + data[0].ToString("x2") + data[1].ToString("x2"), length);
            switch (data[1])
            {
                case 0x00: case 0x06: bigEndian = true; break;
                case 0x01: case 0x07: bigEndian = false; break;
                case 0x08: case 0x09:
                    bigEndian = data[1] == 0x08;
                    pos = 4;
                    // DHEADER of an appendable type in XCDR2: the body's length.
                    uint dh = ReadU32Raw(data, pos, bigEndian, end);
                    pos += 4;
                    if (dh > (uint)(end - pos)) throw Bad("DHEADER " + dh + " exceeds the remaining bytes", length);
                    break;
                default:
                    throw Bad("unsupported encapsulation 0x" + data[0].ToString("x2") + data[1].ToString("x2"), length);
            }
        }

        private static SerializationException Bad(string what, int len)
        {
            return new SerializationException(100, "CDR sample of " + len + " bytes: " + what);
        }

        private static uint ReadU32Raw(byte[] d, int p, bool be, int end)
        {
            if (p + 4 > end) throw Bad("truncated at byte " + p, end);
            return be
                ? (uint)(d[p] << 24 | d[p + 1] << 16 | d[p + 2] << 8 | d[p + 3])
                : (uint)(d[p] | d[p + 1] << 8 | d[p + 2] << 16 | d[p + 3] << 24);
        }

        /// <summary>n: 1, 2, 4 or 8 (a mask, not a division: Mono does not fold a non-constant modulo).</summary>
        private void Align(int n)
        {
            pos += -(pos - 4) & (n - 1);
        }

        /// <summary>Reads an aligned unsigned 32-bit integer.</summary>
        public uint ReadU32()
        {
            Align(4);
            uint v = ReadU32Raw(data, pos, bigEndian, end);
            pos += 4;
            return v;
        }

        /// <summary>Reads an aligned signed 32-bit integer.</summary>
        public int ReadI32() { return (int)ReadU32(); }

        /// <summary>Copies n raw octets into dst at offset.</summary>
        public void ReadBytes(byte[] dst, int offset, int n)
        {
            if (n < 0 || pos + n > end) throw Bad("truncated: " + n + " octets needed at byte " + pos, end);
            Buffer.BlockCopy(data, pos, dst, offset, n);
            pos += n;
        }

        /// <summary>Skips n octets (checked against the remaining bytes).</summary>
        public void Skip(int n)
        {
            if (n < 0 || pos + n > end) throw Bad("truncated: " + n + " octets needed at byte " + pos, end);
            pos += n;
        }

        /// <summary>Reads a sequence length and checks that many octets remain.</summary>
        public int ReadOctetSeqLength(int bound)
        {
            uint n = ReadU32();
            if (bound >= 0 && n > (uint)bound) throw Bad("sequence of " + n + " octets exceeds its bound " + bound, end);
            if (n > (uint)(end - pos)) throw Bad("sequence of " + n + " octets is longer than the remaining " + (end - pos), end);
            return (int)n;
        }

        /// <summary>Reads a string (length with its NUL, then the characters); returns <paramref name="reuse"/> when equal.</summary>
        public string ReadString(int bound, string reuse)
        {
            uint n = ReadU32();
            if (n == 0 || n > (uint)(end - pos)) throw Bad("string length " + n + " invalid at byte " + pos, end);
            int chars = (int)n - 1;
            if (bound >= 0 && chars > bound) throw Bad("string of " + chars + " characters exceeds its bound " + bound, end);
            string s;
            if (reuse != null && reuse.Length == chars && SameAscii(reuse, pos)) s = reuse;
            else s = Encoding.UTF8.GetString(data, pos, chars);
            pos += (int)n;
            return s;
        }

        private bool SameAscii(string s, int at)
        {
            for (int i = 0; i < s.Length; i++)
                if (s[i] > 0x7f || data[at + i] != (byte)s[i]) return false;
            return true;
        }
    }

    /// <summary>Writes an XCDR1 little-endian sample into a caller's buffer.</summary>
    public struct CdrWriter
    {
        private readonly byte[] buf;
        private int pos;

        /// <summary>Writes the encapsulation header 00 01 00 00 and starts the body.</summary>
        public CdrWriter(byte[] buffer)
        {
            buf = buffer;
            buf[0] = 0; buf[1] = 1; buf[2] = 0; buf[3] = 0;
            pos = 4;
        }

        /// <summary>n: 1, 2, 4 or 8 (a mask, not a division: Mono does not fold a non-constant modulo).</summary>
        private void Align(int n)
        {
            int pad = -(pos - 4) & (n - 1);
            for (int i = 0; i < pad; i++) buf[pos++] = 0;
        }

        /// <summary>An aligned unsigned 32-bit integer.</summary>
        public void WriteU32(uint v)
        {
            Align(4);
            buf[pos] = (byte)v; buf[pos + 1] = (byte)(v >> 8); buf[pos + 2] = (byte)(v >> 16); buf[pos + 3] = (byte)(v >> 24);
            pos += 4;
        }

        /// <summary>An aligned signed 32-bit integer.</summary>
        public void WriteI32(int v) { WriteU32((uint)v); }

        /// <summary>Raw octets.</summary>
        public void WriteBytes(byte[] src, int offset, int n)
        {
            if (n > 0) Buffer.BlockCopy(src, offset, buf, pos, n);
            pos += n;
        }

        /// <summary>
        /// Advances over n octets without writing them: only for callers that know those
        /// bytes of the buffer are already what they want (e.g. zeros of a buffer that never
        /// held anything else there).
        /// </summary>
        public void SkipWritten(int n) { pos += n; }

        /// <summary>A string: its UTF-8 length with the NUL, the bytes, the NUL.</summary>
        public void WriteString(string s)
        {
            int n = Encoding.UTF8.GetByteCount(s);
            WriteU32((uint)(n + 1));
            Encoding.UTF8.GetBytes(s, 0, s.Length, buf, pos);
            pos += n;
            buf[pos++] = 0;
        }

        /// <summary>Pads the body to 4 bytes (announced in the header's options) and returns the total length.</summary>
        public int Finish()
        {
            int pad = -(pos - 4) & 3;
            for (int i = 0; i < pad; i++) buf[pos++] = 0;
            buf[3] = (byte)pad;
            return pos;
        }
    }

    /// <summary>The shapes demo type: <c>@key string&lt;128&gt; color; long x; long y; long shapesize;</c>.</summary>
    public sealed class ShapeType
    {
        /// <summary>The key: the shape's color.</summary>
        public string Color = "";
        /// <summary>Horizontal position.</summary>
        public int X;
        /// <summary>Vertical position.</summary>
        public int Y;
        /// <summary>Size.</summary>
        public int ShapeSize;

        /// <summary>The type support of ShapeType.</summary>
        public static readonly ITopicType<ShapeType> Type = new ShapeTypeSupport();

        private sealed class ShapeTypeSupport : ITopicType<ShapeType>
        {
            public uint TypeSupport { get { return 1; } }
            public string TypeName { get { return "ShapeType"; } }
            public int MaxSerializedSize(ShapeType s)
            {
                return 4 + 4 + Encoding.UTF8.GetMaxByteCount((s.Color ?? "").Length) + 1 + 3 + 12 + 3;
            }
            public int Serialize(ShapeType s, byte[] buffer)
            {
                var w = new CdrWriter(buffer);
                w.WriteString(s.Color ?? "");
                w.WriteI32(s.X);
                w.WriteI32(s.Y);
                w.WriteI32(s.ShapeSize);
                return w.Finish();
            }
            public ShapeType Deserialize(byte[] data, int length, ShapeType reuse)
            {
                var r = new CdrReader(data, length);
                var s = reuse ?? new ShapeType();
                s.Color = r.ReadString(128, reuse == null ? null : reuse.Color);
                s.X = r.ReadI32();
                s.Y = r.ReadI32();
                s.ShapeSize = r.ReadI32();
                return s;
            }
        }
    }

    /// <summary>
    /// The perftest sample (<c>TestData_t</c> and its keyed and unbounded variants: one class,
    /// four type supports): <c>octet key[4]; long entity_id; unsigned long seq_num;
    /// long timestamp_sec; unsigned long timestamp_usec; long latency_ping; sequence&lt;octet&gt; bin_data</c>.
    /// </summary>
    public sealed class TestData
    {
        /// <summary>Largest bin_data of the bounded types (MAX_BOUNDED_SEQ_SIZE).</summary>
        public const int MaxBoundedSeqSize = 65470;

        /// <summary>Instance number, little-endian (the key of the keyed types).</summary>
        public readonly byte[] Key = new byte[4];
        /// <summary>Publisher id.</summary>
        public int EntityId;
        /// <summary>Loop index.</summary>
        public uint SeqNum;
        /// <summary>High 32 bits of the microsecond clock.</summary>
        public int TimestampSec;
        /// <summary>Low 32 bits of the microsecond clock.</summary>
        public uint TimestampUsec;
        /// <summary>Target subscriber id, -1 when not a ping.</summary>
        public int LatencyPing;
        /// <summary>Payload (its whole length is sent).</summary>
        public byte[] BinData = new byte[0];

        /// <summary><c>TestData_t</c>: unkeyed, bin_data at most 65470 bytes.</summary>
        public static readonly ITopicType<TestData> Type = new Support(2, "TestData_t");
        /// <summary><c>TestDataKeyed_t</c>: key is the key.</summary>
        public static readonly ITopicType<TestData> KeyedType = new Support(3, "TestDataKeyed_t");
        /// <summary><c>TestDataLarge_t</c>: unkeyed, bin_data unbounded.</summary>
        public static readonly ITopicType<TestData> LargeType = new Support(4, "TestDataLarge_t");
        /// <summary><c>TestDataKeyedLarge_t</c>: keyed, bin_data unbounded.</summary>
        public static readonly ITopicType<TestData> KeyedLargeType = new Support(5, "TestDataKeyedLarge_t");

        private sealed class Support : ITopicType<TestData>
        {
            private readonly uint id;
            private readonly string name;
            public Support(uint id, string name) { this.id = id; this.name = name; }
            public uint TypeSupport { get { return id; } }
            public string TypeName { get { return name; } }
            public int MaxSerializedSize(TestData s) { return 4 + 28 + (s.BinData == null ? 0 : s.BinData.Length) + 3; }
            public int Serialize(TestData s, byte[] buffer)
            {
                var w = new CdrWriter(buffer);
                w.WriteBytes(s.Key, 0, 4);
                w.WriteI32(s.EntityId);
                w.WriteU32(s.SeqNum);
                w.WriteI32(s.TimestampSec);
                w.WriteU32(s.TimestampUsec);
                w.WriteI32(s.LatencyPing);
                int n = s.BinData == null ? 0 : s.BinData.Length;
                w.WriteU32((uint)n);
                w.WriteBytes(s.BinData, 0, n);
                return w.Finish();
            }
            public TestData Deserialize(byte[] data, int length, TestData reuse)
            {
                var r = new CdrReader(data, length);
                var s = reuse ?? new TestData();
                r.ReadBytes(s.Key, 0, 4);
                s.EntityId = r.ReadI32();
                s.SeqNum = r.ReadU32();
                s.TimestampSec = r.ReadI32();
                s.TimestampUsec = r.ReadU32();
                s.LatencyPing = r.ReadI32();
                int n = r.ReadOctetSeqLength(id == 2 || id == 3 ? MaxBoundedSeqSize : -1);
                if (s.BinData == null || s.BinData.Length != n) s.BinData = new byte[n];
                r.ReadBytes(s.BinData, 0, n);
                return s;
            }
        }
    }
}
