// Exceptions mirroring the C API's return codes (and through them the Rust DdsError).
using System;
using System.Runtime.InteropServices;
using FerroDds.Interop;

namespace FerroDds
{
    /// <summary>Base of every FerroDDS failure: the C API's return code and its message.</summary>
    public class DdsException : Exception
    {
        /// <summary>The FERRODDS_RETCODE_* value.</summary>
        public int ReturnCode { get; private set; }

        /// <summary>The return code's name, e.g. "FERRODDS_RETCODE_TIMEOUT".</summary>
        public string ReturnCodeName { get; private set; }

        /// <summary>A failure with a return code and a message.</summary>
        public DdsException(int code, string message) : base(message)
        {
            ReturnCode = code;
            ReturnCodeName = Marshal.PtrToStringAnsi(Native.ferrodds_retcode_name(code));
        }
    }

    /// <summary>RETCODE_ERROR: an unspecified failure inside the middleware.</summary>
    public class DdsErrorException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public DdsErrorException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_UNSUPPORTED.</summary>
    public class UnsupportedException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public UnsupportedException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_BAD_PARAMETER: an invalid value or handle.</summary>
    public class BadParameterException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public BadParameterException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_PRECONDITION_NOT_MET.</summary>
    public class PreconditionNotMetException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public PreconditionNotMetException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_OUT_OF_RESOURCES.</summary>
    public class OutOfResourcesException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public OutOfResourcesException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_NOT_ENABLED.</summary>
    public class NotEnabledException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public NotEnabledException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_ALREADY_DELETED: the entity was disposed (or its participant was).</summary>
    public class AlreadyDeletedException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public AlreadyDeletedException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_TIMEOUT: a blocking call ended without its condition.</summary>
    public class DdsTimeoutException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public DdsTimeoutException(int c, string m) : base(c, m) { } }
    /// <summary>RETCODE_ILLEGAL_OPERATION.</summary>
    public class IllegalOperationException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public IllegalOperationException(int c, string m) : base(c, m) { } }
    /// <summary>A sample could not be serialized or is not a valid sample of its type (a bound exceeded, truncated bytes, unknown encoding).</summary>
    public class SerializationException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public SerializationException(int c, string m) : base(c, m) { } }
    /// <summary>The network transport failed.</summary>
    public class TransportException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public TransportException(int c, string m) : base(c, m) { } }
    /// <summary>The protocol engine refused the operation.</summary>
    public class EngineException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public EngineException(int c, string m) : base(c, m) { } }
    /// <summary>An operating-system or capture-file error.</summary>
    public class DdsIoException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public DdsIoException(int c, string m) : base(c, m) { } }
    /// <summary>A bug: the library panicked and the panic was caught at the API boundary.</summary>
    public class InternalException : DdsException { /** <summary>The exception of return code c with message m.</summary> */ public InternalException(int c, string m) : base(c, m) { } }

    internal static class Check
    {
        public const int Ok = 0, NoData = 11, Timeout = 10, BufferTooSmall = 104;

        /// <summary>Throws the exception of a failed return code, with this thread's last-error message.</summary>
        public static void Rc(int rc)
        {
            if (rc != Ok) throw Exception(rc);
        }

        public static DdsException Exception(int rc)
        {
            string msg = Marshal.PtrToStringAnsi(Native.ferrodds_last_error_message()) ?? "";
            return Exception(rc, msg);
        }

        public static DdsException Exception(int rc, string msg)
        {
            switch (rc)
            {
                case 1: return new DdsErrorException(rc, msg);
                case 2: return new UnsupportedException(rc, msg);
                case 3: return new BadParameterException(rc, msg);
                case 4: return new PreconditionNotMetException(rc, msg);
                case 5: return new OutOfResourcesException(rc, msg);
                case 6: return new NotEnabledException(rc, msg);
                case 9: return new AlreadyDeletedException(rc, msg);
                case 10: return new DdsTimeoutException(rc, msg);
                case 12: return new IllegalOperationException(rc, msg);
                case 100: return new SerializationException(rc, msg);
                case 101: return new TransportException(rc, msg);
                case 102: return new EngineException(rc, msg);
                case 103: return new DdsIoException(rc, msg);
                case 105: return new InternalException(rc, msg);
                default: return new DdsException(rc, msg);
            }
        }
    }
}
