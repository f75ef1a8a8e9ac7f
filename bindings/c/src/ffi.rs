//! The exported functions and the C structs they take. Every function runs behind
//! [`guard`] (errors become return codes, panics are caught), checks its pointers for
//! null, and resolves handles through the table.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use ferrodds::{
    Batching, Config, DataReaderListener, DataReaderQos, DataWriterListener, DataWriterQos,
    Durability, FlowController, GuardCondition, History, Interface, Liveliness, LivelinessKind,
    OfferedIncompatibleQosStatus, Ownership, PublicationMatchedStatus, PublishMode, Reliability,
    ReliabilityKind, RequestedIncompatibleQosStatus, ResourceLimits, SampleInfo, SampleLostStatus,
    StatusMask, SubscriptionMatchedStatus, Time,
};

use crate::entities::{
    InstanceOp, ParticipantEntry, ReaderEntry, TopicEntry, WaitSetEntry, WriterEntry,
};
use crate::error::{guard, last_error_ptr, CError, CResult, FerroddsRetcode};
use crate::handles::{self, Entity};

/// Handle of a participant (0 is never a valid handle).
pub type FerroddsParticipant = u64;
/// Handle of a topic.
pub type FerroddsTopic = u64;
/// Handle of a data writer.
pub type FerroddsWriter = u64;
/// Handle of a data reader.
pub type FerroddsReader = u64;
/// Handle of a wait set.
pub type FerroddsWaitSet = u64;
/// Handle of a guard condition.
pub type FerroddsGuardCondition = u64;

/// Type support `ShapeType` (`@key string<128> color; long x; long y; long shapesize;`,
/// appendable; XCDR1 little-endian bodies are laid out as final).
pub const FERRODDS_TYPE_SHAPE: u32 = 1;
/// Type support `TestData_t` (perftest, unkeyed, `bin_data` at most 65470 bytes).
pub const FERRODDS_TYPE_TEST_DATA: u32 = 2;
/// Type support `TestDataKeyed_t` (perftest, `octet key[4]` is the key).
pub const FERRODDS_TYPE_TEST_DATA_KEYED: u32 = 3;
/// Type support `TestDataLarge_t` (perftest, unkeyed, `bin_data` unbounded).
pub const FERRODDS_TYPE_TEST_DATA_LARGE: u32 = 4;
/// Type support `TestDataKeyedLarge_t` (perftest, keyed, `bin_data` unbounded).
pub const FERRODDS_TYPE_TEST_DATA_KEYED_LARGE: u32 = 5;

/// A duration or timeout that never ends.
pub const FERRODDS_DURATION_INFINITE: i64 = -1;
/// An unlimited resource limit.
pub const FERRODDS_LENGTH_UNLIMITED: i32 = -1;

/// `RELIABILITY` BEST_EFFORT.
pub const FERRODDS_RELIABILITY_BEST_EFFORT: i32 = 0;
/// `RELIABILITY` RELIABLE.
pub const FERRODDS_RELIABILITY_RELIABLE: i32 = 1;
/// `DURABILITY` VOLATILE.
pub const FERRODDS_DURABILITY_VOLATILE: i32 = 0;
/// `DURABILITY` TRANSIENT_LOCAL.
pub const FERRODDS_DURABILITY_TRANSIENT_LOCAL: i32 = 1;
/// `HISTORY` KEEP_LAST (with `history_depth`).
pub const FERRODDS_HISTORY_KEEP_LAST: i32 = 0;
/// `HISTORY` KEEP_ALL.
pub const FERRODDS_HISTORY_KEEP_ALL: i32 = 1;
/// `LIVELINESS` AUTOMATIC.
pub const FERRODDS_LIVELINESS_AUTOMATIC: i32 = 0;
/// `LIVELINESS` MANUAL_BY_PARTICIPANT.
pub const FERRODDS_LIVELINESS_MANUAL_BY_PARTICIPANT: i32 = 1;
/// `LIVELINESS` MANUAL_BY_TOPIC.
pub const FERRODDS_LIVELINESS_MANUAL_BY_TOPIC: i32 = 2;
/// `OWNERSHIP` SHARED.
pub const FERRODDS_OWNERSHIP_SHARED: i32 = 0;
/// `OWNERSHIP` EXCLUSIVE.
pub const FERRODDS_OWNERSHIP_EXCLUSIVE: i32 = 1;

/// `SampleInfo.sample_state`: returned by an earlier read.
pub const FERRODDS_SAMPLE_STATE_READ: i32 = 1;
/// `SampleInfo.sample_state`: not returned before.
pub const FERRODDS_SAMPLE_STATE_NOT_READ: i32 = 2;
/// `SampleInfo.instance_state`: alive.
pub const FERRODDS_INSTANCE_STATE_ALIVE: i32 = 1;
/// `SampleInfo.instance_state`: disposed by a writer.
pub const FERRODDS_INSTANCE_STATE_NOT_ALIVE_DISPOSED: i32 = 2;
/// `SampleInfo.instance_state`: no alive writer.
pub const FERRODDS_INSTANCE_STATE_NOT_ALIVE_NO_WRITERS: i32 = 4;

/// Status mask bit: OFFERED_INCOMPATIBLE_QOS (writer).
pub const FERRODDS_STATUS_OFFERED_INCOMPATIBLE_QOS: u32 = 1 << 5;
/// Status mask bit: REQUESTED_INCOMPATIBLE_QOS (reader).
pub const FERRODDS_STATUS_REQUESTED_INCOMPATIBLE_QOS: u32 = 1 << 6;
/// Status mask bit: SAMPLE_LOST (reader).
pub const FERRODDS_STATUS_SAMPLE_LOST: u32 = 1 << 7;
/// Status mask bit: DATA_AVAILABLE (reader).
pub const FERRODDS_STATUS_DATA_AVAILABLE: u32 = 1 << 10;
/// Status mask bit: PUBLICATION_MATCHED (writer).
pub const FERRODDS_STATUS_PUBLICATION_MATCHED: u32 = 1 << 13;
/// Status mask bit: SUBSCRIPTION_MATCHED (reader).
pub const FERRODDS_STATUS_SUBSCRIPTION_MATCHED: u32 = 1 << 14;

/// How a participant is configured. Initialize with
/// `ferrodds_participant_config_default` or `ferrodds_participant_config_loopback`, then
/// change fields. Strings are copied during `ferrodds_participant_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FerroddsParticipantConfig {
    /// Interface for discovery and data: an interface name or an IPv4 address; NULL: the
    /// default (first non-loopback multicast-capable interface).
    pub interface: *const c_char,
    /// Unicast discovery peers: comma-separated IPv4 addresses; NULL or "": none.
    pub peers: *const c_char,
    /// Multicast discovery: 1 on, 0 off, -1 the default (on).
    pub multicast: i32,
    /// Shared-memory transport between participants of this host: 1 on, 0 off, -1 default.
    pub shared_memory: i32,
    /// Participant id (selects the unicast ports); -1: the first free one.
    pub participant_id: i32,
    /// 1: apply the `FERRODDS_INTERFACE`, `FERRODDS_PEERS`, `FERRODDS_MULTICAST` and
    /// `FERRODDS_CONGESTION_CONTROL` environment variables on top of these fields.
    pub env_overrides: i32,
}

/// QoS of a writer or a reader (every policy the Rust API has). Initialize with
/// `ferrodds_qos_writer_default` or `ferrodds_qos_reader_default`; writer-only fields
/// are ignored by readers. Durations are nanoseconds, `FERRODDS_DURATION_INFINITE` for
/// none.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FerroddsQos {
    /// `FERRODDS_RELIABILITY_*`.
    pub reliability: i32,
    /// How long a KEEP_ALL writer blocks in a write while its history is full.
    pub max_blocking_time_ns: i64,
    /// `FERRODDS_DURABILITY_*`.
    pub durability: i32,
    /// `FERRODDS_HISTORY_*`.
    pub history_kind: i32,
    /// KEEP_LAST depth (>= 1).
    pub history_depth: i32,
    /// RESOURCE_LIMITS max_samples, or `FERRODDS_LENGTH_UNLIMITED`.
    pub max_samples: i32,
    /// RESOURCE_LIMITS max_instances, or `FERRODDS_LENGTH_UNLIMITED`.
    pub max_instances: i32,
    /// RESOURCE_LIMITS max_samples_per_instance, or `FERRODDS_LENGTH_UNLIMITED`.
    pub max_samples_per_instance: i32,
    /// `FERRODDS_LIVELINESS_*`.
    pub liveliness_kind: i32,
    /// Liveliness lease duration.
    pub liveliness_lease_ns: i64,
    /// `FERRODDS_OWNERSHIP_*`.
    pub ownership: i32,
    /// DEADLINE period.
    pub deadline_ns: i64,
    /// Writer: 1 batches small samples (sent on a full batch, a flush or the delay).
    pub batching: i32,
    /// Writer: payload bytes that send a batch.
    pub batch_max_bytes: i64,
    /// Writer: samples that send a batch (0: no limit).
    pub batch_max_samples: i64,
    /// Writer: longest a batched sample waits.
    pub batch_max_flush_delay_ns: i64,
    /// Writer: 0 sends from the writing thread; otherwise asynchronous publishing paced
    /// at about this many bytes per second.
    pub async_bytes_per_second: i64,
    /// Writer (best effort): 1 follows the rate congestion control measured.
    pub pace_best_effort: i32,
    /// PARTITION: one partition name; NULL or "": the default partition. Copied when the
    /// entity is created.
    pub partition: *const c_char,
}

/// An instance: its 16-byte key hash (all zeros: nil).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FerroddsInstanceHandle {
    /// The key hash.
    pub value: [u8; 16],
}

/// Metadata of a taken or read sample.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FerroddsSampleInfo {
    /// `FERRODDS_SAMPLE_STATE_*`.
    pub sample_state: i32,
    /// `FERRODDS_INSTANCE_STATE_*`.
    pub instance_state: i32,
    /// 1: the sample carries data; 0: a dispose/unregister notification (no bytes).
    pub valid_data: i32,
    /// 1: `source_timestamp_ns` is set.
    pub has_source_timestamp: i32,
    /// The writer's timestamp, nanoseconds since the Unix epoch.
    pub source_timestamp_ns: i64,
    /// The instance.
    pub instance_handle: FerroddsInstanceHandle,
    /// GUID of the writer.
    pub publication_handle: [u8; 16],
    /// The writer's sequence number of the sample.
    pub sequence_number: i64,
}

/// PUBLICATION_MATCHED status of a writer.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FerroddsPublicationMatchedStatus {
    /// Readers ever matched.
    pub total_count: u32,
    /// Change of `total_count` since last read.
    pub total_count_change: i32,
    /// Readers matched now.
    pub current_count: u32,
    /// Change of `current_count` since last read.
    pub current_count_change: i32,
    /// GUID of the reader of the last change (zeros: none).
    pub last_subscription_handle: [u8; 16],
}

/// SUBSCRIPTION_MATCHED status of a reader.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FerroddsSubscriptionMatchedStatus {
    /// Writers ever matched.
    pub total_count: u32,
    /// Change of `total_count` since last read.
    pub total_count_change: i32,
    /// Writers matched now.
    pub current_count: u32,
    /// Change of `current_count` since last read.
    pub current_count_change: i32,
    /// GUID of the writer of the last change (zeros: none).
    pub last_publication_handle: [u8; 16],
}

/// OFFERED_ or REQUESTED_INCOMPATIBLE_QOS status.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FerroddsIncompatibleQosStatus {
    /// Incompatible peers seen.
    pub total_count: u32,
    /// Change since last read.
    pub total_count_change: i32,
    /// DDS id of the policy that failed last (`*_QOS_POLICY_ID`), 0: none.
    pub last_policy_id: u32,
}

/// SAMPLE_LOST status of a reader.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FerroddsSampleLostStatus {
    /// Samples lost in total.
    pub total_count: u32,
    /// Change since last read.
    pub total_count_change: i32,
}

/// Callbacks of a writer (NULL members are not called). They run on a participant
/// thread with no library lock held; they may call the API (except deleting the
/// participant) and must return (no longjmp, no C++ exception).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FerroddsWriterListener {
    /// The set of matched readers changed.
    pub on_publication_matched: Option<
        unsafe extern "C" fn(
            writer: FerroddsWriter,
            status: *const FerroddsPublicationMatchedStatus,
            user: *mut c_void,
        ),
    >,
    /// A reader requested QoS this writer does not offer.
    pub on_offered_incompatible_qos: Option<
        unsafe extern "C" fn(
            writer: FerroddsWriter,
            status: *const FerroddsIncompatibleQosStatus,
            user: *mut c_void,
        ),
    >,
    /// Passed to every callback; must stay valid until the listener is replaced or the
    /// writer deleted, and be usable from any thread.
    pub user: *mut c_void,
}

/// Callbacks of a reader (NULL members are not called); same rules as
/// `FerroddsWriterListener`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FerroddsReaderListener {
    /// New samples can be taken.
    pub on_data_available: Option<unsafe extern "C" fn(reader: FerroddsReader, user: *mut c_void)>,
    /// The set of matched writers changed.
    pub on_subscription_matched: Option<
        unsafe extern "C" fn(
            reader: FerroddsReader,
            status: *const FerroddsSubscriptionMatchedStatus,
            user: *mut c_void,
        ),
    >,
    /// A writer does not offer the QoS this reader requests.
    pub on_requested_incompatible_qos: Option<
        unsafe extern "C" fn(
            reader: FerroddsReader,
            status: *const FerroddsIncompatibleQosStatus,
            user: *mut c_void,
        ),
    >,
    /// Samples were lost.
    pub on_sample_lost: Option<
        unsafe extern "C" fn(
            reader: FerroddsReader,
            status: *const FerroddsSampleLostStatus,
            user: *mut c_void,
        ),
    >,
    /// Passed to every callback (see `FerroddsWriterListener.user`).
    pub user: *mut c_void,
}

/// Called by `ferrodds_take_each` and `ferrodds_read_each` for each sample: its
/// serialized bytes (valid during the call only; `len` 0 without valid data), its info
/// and the caller's `user`.
pub type FerroddsSampleCallback = Option<
    unsafe extern "C" fn(
        data: *const u8,
        len: usize,
        info: *const FerroddsSampleInfo,
        user: *mut c_void,
    ),
>;

// ---------------------------------------------------------------------------------------
// Argument helpers

thread_local! {
    /// Depth of listener callbacks running on this thread.
    static IN_CALLBACK: Cell<u32> = const { Cell::new(0) };
}

/// Runs a C callback with the in-callback mark set.
fn in_callback(f: impl FnOnce()) {
    IN_CALLBACK.with(|c| c.set(c.get() + 1));
    f();
    IN_CALLBACK.with(|c| c.set(c.get().saturating_sub(1)));
}

fn null(what: &str) -> CError {
    CError::BadParameter(format!("{what} is NULL"))
}

/// The string at `p`, `None` for NULL.
fn opt_str<'a>(p: *const c_char, what: &str) -> CResult<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the C caller passes NULL (handled above) or a NUL-terminated string that
    // stays valid for the duration of the call (the documented contract of every string
    // argument); it is only read.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(Some)
        .map_err(|_| CError::BadParameter(format!("{what} is not UTF-8")))
}

/// The bytes `(p, len)`, borrowed for one call (see [`crate::types::WireIn`]).
fn bytes(p: *const u8, len: usize, what: &str) -> CResult<&'static [u8]> {
    if p.is_null() {
        return Err(null(what));
    }
    if len > isize::MAX as usize {
        return Err(CError::BadParameter(format!(
            "{what}: length {len} too large"
        )));
    }
    // SAFETY: the caller passes `len` readable bytes at `p` (non-null, checked above),
    // which stay valid and unmodified for the duration of this call. The `'static`
    // lifetime is confined to the call: the slice is handed to a synchronous write that
    // copies it and keeps no reference, and it is dropped before the function returns.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The writable elements `(p, capacity)` for one call; empty when `capacity` is 0 (`p` may
/// then be NULL).
fn slice_mut<'a, T>(p: *mut T, capacity: usize, what: &str) -> CResult<&'a mut [T]> {
    if capacity == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null(what));
    }
    if capacity > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(CError::BadParameter(format!(
            "{what}: capacity {capacity} too large"
        )));
    }
    // SAFETY: the caller passes `capacity` writable, aligned elements at `p` (non-null,
    // checked, size within isize::MAX), not aliased and valid for the duration of the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, capacity) })
}

/// `*p` for writing a result.
fn out<'a, T>(p: *mut T, what: &str) -> CResult<&'a mut T> {
    // SAFETY: the caller passes NULL (rejected) or a pointer to a writable, aligned `T`
    // not aliased during the call (the contract of every out-parameter).
    unsafe { p.as_mut() }.ok_or_else(|| null(what))
}

/// `*p` for reading an input struct.
fn input<'a, T>(p: *const T, what: &str) -> CResult<&'a T> {
    // SAFETY: the caller passes NULL (rejected) or a pointer to an initialized, aligned
    // `T` valid for the call.
    unsafe { p.as_ref() }.ok_or_else(|| null(what))
}

fn duration(ns: i64, what: &str) -> CResult<Option<Duration>> {
    match ns {
        FERRODDS_DURATION_INFINITE => Ok(None),
        ns if ns >= 0 => Ok(Some(Duration::from_nanos(ns as u64))),
        ns => Err(CError::BadParameter(format!(
            "{what} = {ns} ns: must be >= 0 or FERRODDS_DURATION_INFINITE"
        ))),
    }
}

/// A timeout: "infinite" waits for ten years.
fn timeout(ns: i64) -> CResult<Duration> {
    Ok(duration(ns, "timeout_ns")?.unwrap_or(Duration::from_secs(10 * 365 * 86_400)))
}

fn limit(v: i32, what: &str) -> CResult<Option<u32>> {
    match v {
        FERRODDS_LENGTH_UNLIMITED => Ok(None),
        v if v > 0 => Ok(Some(v as u32)),
        v => Err(CError::BadParameter(format!(
            "{what} = {v}: must be > 0 or FERRODDS_LENGTH_UNLIMITED"
        ))),
    }
}

fn writer(h: FerroddsWriter) -> CResult<Arc<WriterEntry>> {
    match handles::get(h, "writer")? {
        Entity::Writer(w) => Ok(w),
        e => Err(CError::BadParameter(format!(
            "writer: the handle is a {}",
            e.kind()
        ))),
    }
}

fn reader(h: FerroddsReader) -> CResult<Arc<ReaderEntry>> {
    match handles::get(h, "reader")? {
        Entity::Reader(r) => Ok(r),
        e => Err(CError::BadParameter(format!(
            "reader: the handle is a {}",
            e.kind()
        ))),
    }
}

fn participant(h: FerroddsParticipant) -> CResult<Arc<ParticipantEntry>> {
    match handles::get(h, "participant")? {
        Entity::Participant(p) => Ok(p),
        e => Err(CError::BadParameter(format!(
            "participant: the handle is a {}",
            e.kind()
        ))),
    }
}

fn topic(h: FerroddsTopic) -> CResult<Arc<TopicEntry>> {
    match handles::get(h, "topic")? {
        Entity::Topic(t) => Ok(t),
        e => Err(CError::BadParameter(format!(
            "topic: the handle is a {}",
            e.kind()
        ))),
    }
}

fn waitset(h: FerroddsWaitSet) -> CResult<Arc<WaitSetEntry>> {
    match handles::get(h, "waitset")? {
        Entity::WaitSet(w) => Ok(w),
        e => Err(CError::BadParameter(format!(
            "waitset: the handle is a {}",
            e.kind()
        ))),
    }
}

fn guid_bytes(g: Option<ferrodds::Guid>) -> [u8; 16] {
    g.map_or([0; 16], ferrodds::Guid::to_bytes)
}

fn sample_info(i: &SampleInfo) -> FerroddsSampleInfo {
    FerroddsSampleInfo {
        sample_state: match i.sample_state {
            ferrodds::SampleState::Read => FERRODDS_SAMPLE_STATE_READ,
            ferrodds::SampleState::NotRead => FERRODDS_SAMPLE_STATE_NOT_READ,
        },
        instance_state: match i.instance_state {
            ferrodds::InstanceState::Alive => FERRODDS_INSTANCE_STATE_ALIVE,
            ferrodds::InstanceState::NotAliveDisposed => FERRODDS_INSTANCE_STATE_NOT_ALIVE_DISPOSED,
            ferrodds::InstanceState::NotAliveNoWriters => {
                FERRODDS_INSTANCE_STATE_NOT_ALIVE_NO_WRITERS
            }
        },
        valid_data: i32::from(i.valid_data),
        has_source_timestamp: i32::from(i.source_timestamp.is_some()),
        source_timestamp_ns: i.source_timestamp.map_or(0, Time::to_nanos),
        instance_handle: FerroddsInstanceHandle {
            value: i.instance_handle.0,
        },
        publication_handle: i.publication_handle.to_bytes(),
        sequence_number: i.sequence_number,
    }
}

fn pub_matched(s: &PublicationMatchedStatus) -> FerroddsPublicationMatchedStatus {
    FerroddsPublicationMatchedStatus {
        total_count: s.total_count,
        total_count_change: s.total_count_change,
        current_count: s.current_count,
        current_count_change: s.current_count_change,
        last_subscription_handle: guid_bytes(s.last_subscription_handle),
    }
}

fn sub_matched(s: &SubscriptionMatchedStatus) -> FerroddsSubscriptionMatchedStatus {
    FerroddsSubscriptionMatchedStatus {
        total_count: s.total_count,
        total_count_change: s.total_count_change,
        current_count: s.current_count,
        current_count_change: s.current_count_change,
        last_publication_handle: guid_bytes(s.last_publication_handle),
    }
}

fn offered(s: &OfferedIncompatibleQosStatus) -> FerroddsIncompatibleQosStatus {
    FerroddsIncompatibleQosStatus {
        total_count: s.total_count,
        total_count_change: s.total_count_change,
        last_policy_id: s.last_policy_id.map_or(0, ferrodds::QosPolicyId::id),
    }
}

fn requested(s: &RequestedIncompatibleQosStatus) -> FerroddsIncompatibleQosStatus {
    FerroddsIncompatibleQosStatus {
        total_count: s.total_count,
        total_count_change: s.total_count_change,
        last_policy_id: s.last_policy_id.map_or(0, ferrodds::QosPolicyId::id),
    }
}

fn lost(s: &SampleLostStatus) -> FerroddsSampleLostStatus {
    FerroddsSampleLostStatus {
        total_count: s.total_count,
        total_count_change: s.total_count_change,
    }
}

// ---------------------------------------------------------------------------------------
// QoS and configuration conversion

/// The endpoint policies common to writers and readers.
struct Common {
    reliability: Reliability,
    durability: Durability,
    history: History,
    resource_limits: ResourceLimits,
    liveliness: Liveliness,
    ownership: Ownership,
    deadline: Option<Duration>,
    partition: Vec<String>,
}

fn common(q: &FerroddsQos) -> CResult<Common> {
    let kind = match q.reliability {
        FERRODDS_RELIABILITY_BEST_EFFORT => ReliabilityKind::BestEffort,
        FERRODDS_RELIABILITY_RELIABLE => ReliabilityKind::Reliable,
        v => return Err(CError::BadParameter(format!("qos.reliability = {v}"))),
    };
    let max_blocking_time = duration(q.max_blocking_time_ns, "qos.max_blocking_time_ns")?
        .unwrap_or(Duration::from_secs(10 * 365 * 86_400));
    let durability = match q.durability {
        FERRODDS_DURABILITY_VOLATILE => Durability::Volatile,
        FERRODDS_DURABILITY_TRANSIENT_LOCAL => Durability::TransientLocal,
        v => return Err(CError::BadParameter(format!("qos.durability = {v}"))),
    };
    let history = match q.history_kind {
        FERRODDS_HISTORY_KEEP_ALL => History::KeepAll,
        FERRODDS_HISTORY_KEEP_LAST if q.history_depth >= 1 => {
            History::KeepLast(q.history_depth as u32)
        }
        FERRODDS_HISTORY_KEEP_LAST => {
            return Err(CError::BadParameter(format!(
                "qos.history_depth = {}: KEEP_LAST needs a depth >= 1",
                q.history_depth
            )))
        }
        v => return Err(CError::BadParameter(format!("qos.history_kind = {v}"))),
    };
    let liveliness = Liveliness {
        kind: match q.liveliness_kind {
            FERRODDS_LIVELINESS_AUTOMATIC => LivelinessKind::Automatic,
            FERRODDS_LIVELINESS_MANUAL_BY_PARTICIPANT => LivelinessKind::ManualByParticipant,
            FERRODDS_LIVELINESS_MANUAL_BY_TOPIC => LivelinessKind::ManualByTopic,
            v => return Err(CError::BadParameter(format!("qos.liveliness_kind = {v}"))),
        },
        lease_duration: duration(q.liveliness_lease_ns, "qos.liveliness_lease_ns")?,
    };
    let ownership = match q.ownership {
        FERRODDS_OWNERSHIP_SHARED => Ownership::Shared,
        FERRODDS_OWNERSHIP_EXCLUSIVE => Ownership::Exclusive,
        v => return Err(CError::BadParameter(format!("qos.ownership = {v}"))),
    };
    let partition = opt_str(q.partition, "qos.partition")?
        .filter(|p| !p.is_empty())
        .map(|p| vec![p.to_owned()])
        .unwrap_or_default();
    Ok(Common {
        reliability: Reliability {
            kind,
            max_blocking_time,
        },
        durability,
        history,
        resource_limits: ResourceLimits {
            max_samples: limit(q.max_samples, "qos.max_samples")?,
            max_instances: limit(q.max_instances, "qos.max_instances")?,
            max_samples_per_instance: limit(
                q.max_samples_per_instance,
                "qos.max_samples_per_instance",
            )?,
        },
        liveliness,
        ownership,
        deadline: duration(q.deadline_ns, "qos.deadline_ns")?,
        partition,
    })
}

fn writer_qos(q: &FerroddsQos) -> CResult<(DataWriterQos, Vec<String>)> {
    let c = common(q)?;
    let size = |v: i64, what: &str| {
        usize::try_from(v).map_err(|_| CError::BadParameter(format!("{what} = {v}: must be >= 0")))
    };
    let batching = Batching {
        enabled: match q.batching {
            0 => false,
            1 => true,
            v => return Err(CError::BadParameter(format!("qos.batching = {v}"))),
        },
        max_bytes: size(q.batch_max_bytes, "qos.batch_max_bytes")?,
        max_samples: size(q.batch_max_samples, "qos.batch_max_samples")?,
        max_flush_delay: duration(q.batch_max_flush_delay_ns, "qos.batch_max_flush_delay_ns")?
            .unwrap_or(Duration::MAX),
        // One source timestamp per batch, as Connext's default (not in the C struct).
        ..Batching::default()
    };
    let publish_mode = match q.async_bytes_per_second {
        0 => PublishMode::Synchronous,
        v if v > 0 => PublishMode::Asynchronous(FlowController::bytes_per_second(v as u64)),
        v => {
            return Err(CError::BadParameter(format!(
                "qos.async_bytes_per_second = {v}: must be >= 0"
            )))
        }
    };
    let qos = DataWriterQos {
        reliability: c.reliability,
        durability: c.durability,
        history: c.history,
        resource_limits: c.resource_limits,
        liveliness: c.liveliness,
        ownership: c.ownership,
        deadline: c.deadline,
        batching,
        publish_mode,
        pace_best_effort: q.pace_best_effort != 0,
    };
    Ok((qos, c.partition))
}

fn reader_qos(q: &FerroddsQos) -> CResult<(DataReaderQos, Vec<String>)> {
    let c = common(q)?;
    let qos = DataReaderQos {
        reliability: c.reliability,
        durability: c.durability,
        history: c.history,
        resource_limits: c.resource_limits,
        liveliness: c.liveliness,
        ownership: c.ownership,
        deadline: c.deadline,
        multicast_group: None,
    };
    Ok((qos, c.partition))
}

fn ns(d: Option<Duration>) -> i64 {
    d.filter(|d| *d < Duration::from_secs(1 << 33))
        .map_or(FERRODDS_DURATION_INFINITE, |d| d.as_nanos() as i64)
}

fn qos_from(
    reliability: &Reliability,
    durability: Durability,
    history: History,
    rl: &ResourceLimits,
    liveliness: &Liveliness,
    ownership: Ownership,
    deadline: Option<Duration>,
) -> FerroddsQos {
    let lim = |v: Option<u32>| v.map_or(FERRODDS_LENGTH_UNLIMITED, |v| v as i32);
    FerroddsQos {
        reliability: match reliability.kind {
            ReliabilityKind::BestEffort => FERRODDS_RELIABILITY_BEST_EFFORT,
            ReliabilityKind::Reliable => FERRODDS_RELIABILITY_RELIABLE,
        },
        max_blocking_time_ns: ns(Some(reliability.max_blocking_time)),
        durability: match durability {
            Durability::Volatile => FERRODDS_DURABILITY_VOLATILE,
            Durability::TransientLocal => FERRODDS_DURABILITY_TRANSIENT_LOCAL,
        },
        history_kind: match history {
            History::KeepLast(_) => FERRODDS_HISTORY_KEEP_LAST,
            History::KeepAll => FERRODDS_HISTORY_KEEP_ALL,
        },
        history_depth: match history {
            History::KeepLast(d) => d as i32,
            History::KeepAll => 1,
        },
        max_samples: lim(rl.max_samples),
        max_instances: lim(rl.max_instances),
        max_samples_per_instance: lim(rl.max_samples_per_instance),
        liveliness_kind: match liveliness.kind {
            LivelinessKind::Automatic => FERRODDS_LIVELINESS_AUTOMATIC,
            LivelinessKind::ManualByParticipant => FERRODDS_LIVELINESS_MANUAL_BY_PARTICIPANT,
            LivelinessKind::ManualByTopic => FERRODDS_LIVELINESS_MANUAL_BY_TOPIC,
        },
        liveliness_lease_ns: ns(liveliness.lease_duration),
        ownership: match ownership {
            Ownership::Shared => FERRODDS_OWNERSHIP_SHARED,
            Ownership::Exclusive => FERRODDS_OWNERSHIP_EXCLUSIVE,
        },
        deadline_ns: ns(deadline),
        batching: 0,
        batch_max_bytes: 0,
        batch_max_samples: 0,
        batch_max_flush_delay_ns: FERRODDS_DURATION_INFINITE,
        async_bytes_per_second: 0,
        pace_best_effort: 0,
        partition: std::ptr::null(),
    }
}

fn config(c: &FerroddsParticipantConfig) -> CResult<Config> {
    let mut cfg = Config::default();
    if let Some(i) = opt_str(c.interface, "config.interface")? {
        cfg = cfg.interface(Interface::parse(i));
    }
    if let Some(p) = opt_str(c.peers, "config.peers")? {
        let mut peers = Vec::new();
        for s in p.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            peers.push(s.parse::<Ipv4Addr>().map_err(|_| {
                CError::BadParameter(format!("config.peers: {s:?} is not an IPv4 address"))
            })?);
        }
        cfg = cfg.initial_peers(peers);
    }
    let flag = |v: i32, what: &str| match v {
        -1 => Ok(None),
        0 => Ok(Some(false)),
        1 => Ok(Some(true)),
        v => Err(CError::BadParameter(format!(
            "{what} = {v}: must be -1, 0 or 1"
        ))),
    };
    if let Some(m) = flag(c.multicast, "config.multicast")? {
        cfg = cfg.multicast(m);
    }
    if let Some(s) = flag(c.shared_memory, "config.shared_memory")? {
        cfg = cfg.shared_memory(s);
    }
    match c.participant_id {
        -1 => {}
        id if id >= 0 => cfg = cfg.participant_id(Some(id as u32)),
        id => {
            return Err(CError::BadParameter(format!(
                "config.participant_id = {id}: must be >= 0 or -1"
            )))
        }
    }
    if flag(c.env_overrides, "config.env_overrides")? == Some(true) {
        cfg = cfg.with_env_overrides()?;
    }
    Ok(cfg)
}

// ---------------------------------------------------------------------------------------
// Listeners

/// A `user` pointer the C caller promised to be usable from any thread.
#[derive(Clone, Copy)]
struct User(*mut c_void);
// SAFETY: the pointer is never dereferenced by the library, only handed back to the
// caller's callbacks; the header states that it must be usable from any thread.
unsafe impl Send for User {}
// SAFETY: as for `Send`: the library only copies the pointer value.
unsafe impl Sync for User {}

/// The callbacks of a `FerroddsWriterListener` (without its `user`, kept as [`User`]).
struct WriterCallbacks {
    on_publication_matched: Option<
        unsafe extern "C" fn(FerroddsWriter, *const FerroddsPublicationMatchedStatus, *mut c_void),
    >,
    on_offered_incompatible_qos: Option<
        unsafe extern "C" fn(FerroddsWriter, *const FerroddsIncompatibleQosStatus, *mut c_void),
    >,
}

struct CWriterListener {
    handle: FerroddsWriter,
    l: WriterCallbacks,
    user: User,
}

impl DataWriterListener for CWriterListener {
    fn on_publication_matched(&self, status: &PublicationMatchedStatus) {
        if let Some(f) = self.l.on_publication_matched {
            let s = pub_matched(status);
            // SAFETY: `f` is the caller's callback with the declared signature; `s`
            // lives across the call; `user` is the caller's own pointer.
            in_callback(|| unsafe { f(self.handle, &s, self.user.0) });
        }
    }
    fn on_offered_incompatible_qos(&self, status: &OfferedIncompatibleQosStatus) {
        if let Some(f) = self.l.on_offered_incompatible_qos {
            let s = offered(status);
            // SAFETY: as in `on_publication_matched`.
            in_callback(|| unsafe { f(self.handle, &s, self.user.0) });
        }
    }
}

/// The callbacks of a `FerroddsReaderListener` (without its `user`, kept as [`User`]).
struct ReaderCallbacks {
    on_data_available: Option<unsafe extern "C" fn(FerroddsReader, *mut c_void)>,
    on_subscription_matched: Option<
        unsafe extern "C" fn(FerroddsReader, *const FerroddsSubscriptionMatchedStatus, *mut c_void),
    >,
    on_requested_incompatible_qos: Option<
        unsafe extern "C" fn(FerroddsReader, *const FerroddsIncompatibleQosStatus, *mut c_void),
    >,
    on_sample_lost:
        Option<unsafe extern "C" fn(FerroddsReader, *const FerroddsSampleLostStatus, *mut c_void)>,
}

struct CReaderListener {
    handle: FerroddsReader,
    l: ReaderCallbacks,
    user: User,
}

impl DataReaderListener for CReaderListener {
    fn on_data_available(&self) {
        if let Some(f) = self.l.on_data_available {
            // SAFETY: `f` is the caller's callback with the declared signature; `user`
            // is the caller's own pointer.
            in_callback(|| unsafe { f(self.handle, self.user.0) });
        }
    }
    fn on_subscription_matched(&self, status: &SubscriptionMatchedStatus) {
        if let Some(f) = self.l.on_subscription_matched {
            let s = sub_matched(status);
            // SAFETY: as in `on_data_available`; `s` lives across the call.
            in_callback(|| unsafe { f(self.handle, &s, self.user.0) });
        }
    }
    fn on_requested_incompatible_qos(&self, status: &RequestedIncompatibleQosStatus) {
        if let Some(f) = self.l.on_requested_incompatible_qos {
            let s = requested(status);
            // SAFETY: as in `on_data_available`; `s` lives across the call.
            in_callback(|| unsafe { f(self.handle, &s, self.user.0) });
        }
    }
    fn on_sample_lost(&self, status: &SampleLostStatus) {
        if let Some(f) = self.l.on_sample_lost {
            let s = lost(status);
            // SAFETY: as in `on_data_available`; `s` lives across the call.
            in_callback(|| unsafe { f(self.handle, &s, self.user.0) });
        }
    }
}

fn writer_listener(
    handle: FerroddsWriter,
    l: &FerroddsWriterListener,
) -> Arc<dyn DataWriterListener> {
    Arc::new(CWriterListener {
        handle,
        l: WriterCallbacks {
            on_publication_matched: l.on_publication_matched,
            on_offered_incompatible_qos: l.on_offered_incompatible_qos,
        },
        user: User(l.user),
    })
}

fn reader_listener(
    handle: FerroddsReader,
    l: &FerroddsReaderListener,
) -> Arc<dyn DataReaderListener> {
    Arc::new(CReaderListener {
        handle,
        l: ReaderCallbacks {
            on_data_available: l.on_data_available,
            on_subscription_matched: l.on_subscription_matched,
            on_requested_incompatible_qos: l.on_requested_incompatible_qos,
            on_sample_lost: l.on_sample_lost,
        },
        user: User(l.user),
    })
}

// ---------------------------------------------------------------------------------------
// Exported functions

/// The message of the last failed call on this thread ("" when none failed yet): the
/// function, the error and the argument or value concerned. Valid until this thread's
/// next failing call.
#[no_mangle]
pub extern "C" fn ferrodds_last_error_message() -> *const c_char {
    last_error_ptr()
}

/// The name of a return code (`"FERRODDS_RETCODE_TIMEOUT"`, ...; `"unknown"` for others);
/// a static string.
#[no_mangle]
pub extern "C" fn ferrodds_retcode_name(code: FerroddsRetcode) -> *const c_char {
    use crate::error::*;
    let s: &'static CStr = match code {
        FERRODDS_RETCODE_OK => c"FERRODDS_RETCODE_OK",
        FERRODDS_RETCODE_ERROR => c"FERRODDS_RETCODE_ERROR",
        FERRODDS_RETCODE_UNSUPPORTED => c"FERRODDS_RETCODE_UNSUPPORTED",
        FERRODDS_RETCODE_BAD_PARAMETER => c"FERRODDS_RETCODE_BAD_PARAMETER",
        FERRODDS_RETCODE_PRECONDITION_NOT_MET => c"FERRODDS_RETCODE_PRECONDITION_NOT_MET",
        FERRODDS_RETCODE_OUT_OF_RESOURCES => c"FERRODDS_RETCODE_OUT_OF_RESOURCES",
        FERRODDS_RETCODE_NOT_ENABLED => c"FERRODDS_RETCODE_NOT_ENABLED",
        FERRODDS_RETCODE_ALREADY_DELETED => c"FERRODDS_RETCODE_ALREADY_DELETED",
        FERRODDS_RETCODE_TIMEOUT => c"FERRODDS_RETCODE_TIMEOUT",
        FERRODDS_RETCODE_NO_DATA => c"FERRODDS_RETCODE_NO_DATA",
        FERRODDS_RETCODE_ILLEGAL_OPERATION => c"FERRODDS_RETCODE_ILLEGAL_OPERATION",
        FERRODDS_RETCODE_SERIALIZATION => c"FERRODDS_RETCODE_SERIALIZATION",
        FERRODDS_RETCODE_TRANSPORT => c"FERRODDS_RETCODE_TRANSPORT",
        FERRODDS_RETCODE_ENGINE => c"FERRODDS_RETCODE_ENGINE",
        FERRODDS_RETCODE_IO => c"FERRODDS_RETCODE_IO",
        FERRODDS_RETCODE_BUFFER_TOO_SMALL => c"FERRODDS_RETCODE_BUFFER_TOO_SMALL",
        FERRODDS_RETCODE_INTERNAL => c"FERRODDS_RETCODE_INTERNAL",
        _ => c"unknown",
    };
    s.as_ptr()
}

/// Fills `*config` with the defaults: default interface, multicast discovery, no peers,
/// environment overrides applied.
#[no_mangle]
pub extern "C" fn ferrodds_participant_config_default(
    config: *mut FerroddsParticipantConfig,
) -> FerroddsRetcode {
    guard("ferrodds_participant_config_default", || {
        *out(config, "config")? = FerroddsParticipantConfig {
            interface: std::ptr::null(),
            peers: std::ptr::null(),
            multicast: -1,
            shared_memory: -1,
            participant_id: -1,
            env_overrides: 1,
        };
        Ok(())
    })
}

/// Fills `*config` for loopback only: interface and peer 127.0.0.1, multicast off, no
/// environment overrides (what tests use).
#[no_mangle]
pub extern "C" fn ferrodds_participant_config_loopback(
    config: *mut FerroddsParticipantConfig,
) -> FerroddsRetcode {
    guard("ferrodds_participant_config_loopback", || {
        *out(config, "config")? = FerroddsParticipantConfig {
            interface: c"127.0.0.1".as_ptr(),
            peers: c"127.0.0.1".as_ptr(),
            multicast: 0,
            shared_memory: -1,
            participant_id: -1,
            env_overrides: 0,
        };
        Ok(())
    })
}

/// Creates a participant in `domain_id`. `config` NULL: the defaults with the
/// environment overrides.
#[no_mangle]
pub extern "C" fn ferrodds_participant_create(
    domain_id: u32,
    config: *const FerroddsParticipantConfig,
    participant: *mut FerroddsParticipant,
) -> FerroddsRetcode {
    guard("ferrodds_participant_create", || {
        let result = out(participant, "participant")?;
        let cfg = if config.is_null() {
            Config::from_env()?
        } else {
            self::config(input(config, "config")?)?
        };
        let p = ferrodds::DomainParticipant::with_config(domain_id, cfg)?;
        *result = handles::insert(
            Entity::Participant(Arc::new(ParticipantEntry { participant: p })),
            0,
        )?;
        Ok(())
    })
}

/// Deletes a participant and every topic, writer and reader created in it (their
/// handles become invalid). Not allowed from a listener callback.
#[no_mangle]
pub extern "C" fn ferrodds_participant_delete(participant: FerroddsParticipant) -> FerroddsRetcode {
    guard("ferrodds_participant_delete", || {
        if IN_CALLBACK.with(Cell::get) > 0 {
            return Err(CError::Illegal(
                "a participant cannot be deleted from a listener callback",
            ));
        }
        let p = handles::remove_if(participant, "participant", |e| {
            matches!(e, Entity::Participant(_))
        })?;
        let children = handles::remove_children(participant);
        drop(children);
        drop(p);
        Ok(())
    })
}

/// Creates (or finds) the topic `name` with the type support `type_id`
/// (`FERRODDS_TYPE_*`). Fails with `FERRODDS_RETCODE_PRECONDITION_NOT_MET` when the name
/// is already used with another type in this participant.
#[no_mangle]
pub extern "C" fn ferrodds_topic_create(
    participant: FerroddsParticipant,
    name: *const c_char,
    type_id: u32,
    topic: *mut FerroddsTopic,
) -> FerroddsRetcode {
    guard("ferrodds_topic_create", || {
        let result = out(topic, "topic")?;
        let name = opt_str(name, "name")?.ok_or_else(|| null("name"))?;
        let p = self::participant(participant)?;
        let t = TopicEntry::create(&p, participant, name, type_id)?;
        *result = handles::insert(Entity::Topic(Arc::new(t)), participant)?;
        Ok(())
    })
}

/// Deletes a topic handle (writers and readers created on it keep working).
#[no_mangle]
pub extern "C" fn ferrodds_topic_delete(topic: FerroddsTopic) -> FerroddsRetcode {
    guard("ferrodds_topic_delete", || {
        handles::remove_if(topic, "topic", |e| matches!(e, Entity::Topic(_)))?;
        Ok(())
    })
}

/// Fills `*qos` with the writer defaults: RELIABLE (max_blocking_time 100 ms), VOLATILE,
/// KEEP_LAST 1, unlimited resources, AUTOMATIC liveliness, SHARED, no deadline, no
/// batching, synchronous.
#[no_mangle]
pub extern "C" fn ferrodds_qos_writer_default(qos: *mut FerroddsQos) -> FerroddsRetcode {
    guard("ferrodds_qos_writer_default", || {
        let d = DataWriterQos::default();
        let mut q = qos_from(
            &d.reliability,
            d.durability,
            d.history,
            &d.resource_limits,
            &d.liveliness,
            d.ownership,
            d.deadline,
        );
        q.batch_max_bytes = d.batching.max_bytes as i64;
        q.batch_max_samples = d.batching.max_samples as i64;
        *out(qos, "qos")? = q;
        Ok(())
    })
}

/// Fills `*qos` with the reader defaults: BEST_EFFORT, VOLATILE, KEEP_LAST 1, unlimited
/// resources, AUTOMATIC liveliness, SHARED, no deadline.
#[no_mangle]
pub extern "C" fn ferrodds_qos_reader_default(qos: *mut FerroddsQos) -> FerroddsRetcode {
    guard("ferrodds_qos_reader_default", || {
        let d = DataReaderQos::default();
        *out(qos, "qos")? = qos_from(
            &d.reliability,
            d.durability,
            d.history,
            &d.resource_limits,
            &d.liveliness,
            d.ownership,
            d.deadline,
        );
        Ok(())
    })
}

/// Creates a writer on `topic` (a topic of `participant`). `qos` NULL: the writer
/// defaults. `listener` (copied; NULL: none) is installed before the writer can match,
/// so no matched event is missed.
#[no_mangle]
pub extern "C" fn ferrodds_writer_create(
    participant: FerroddsParticipant,
    topic: FerroddsTopic,
    qos: *const FerroddsQos,
    listener: *const FerroddsWriterListener,
    writer: *mut FerroddsWriter,
) -> FerroddsRetcode {
    guard("ferrodds_writer_create", || {
        let result = out(writer, "writer")?;
        let p = self::participant(participant)?;
        let t = self::topic(topic)?;
        if t.participant != participant {
            return Err(CError::BadParameter(
                "topic: belongs to another participant".into(),
            ));
        }
        let (q, partition) = if qos.is_null() {
            (DataWriterQos::default(), Vec::new())
        } else {
            writer_qos(input(qos, "qos")?)?
        };
        let listener = if listener.is_null() {
            None
        } else {
            Some(*input(listener, "listener")?)
        };
        *result = handles::insert_with(participant, |h| {
            let w = WriterEntry::create(&p, &t, q, partition, |w| {
                if let Some(l) = listener {
                    let l = writer_listener(h, &l);
                    w.set_listener(Some(Arc::clone(&l)));
                    // A reader matched during the creation, before the listener was
                    // installed, is reported now.
                    let s = w.matched_status();
                    if s.total_count > 0 {
                        l.on_publication_matched(&s);
                    }
                }
            })?;
            Ok(Entity::Writer(Arc::new(w)))
        })?;
        Ok(())
    })
}

/// Deletes a writer (matched readers see it gone).
#[no_mangle]
pub extern "C" fn ferrodds_writer_delete(writer: FerroddsWriter) -> FerroddsRetcode {
    guard("ferrodds_writer_delete", || {
        handles::remove_if(writer, "writer", |e| matches!(e, Entity::Writer(_)))?;
        Ok(())
    })
}

/// Writes one sample: `data` holds `len` bytes of serialized CDR, the 4-byte
/// encapsulation header (XCDR1 little-endian: `00 01 00 00`, options may announce up to 3
/// padding bytes) followed by the body. The bytes are checked against the topic type
/// (bounds included; `FERRODDS_RETCODE_SERIALIZATION` names what is wrong) and copied
/// once; the buffer is the caller's again when the call returns. A KEEP_ALL writer with
/// a full history blocks up to `max_blocking_time`, then returns
/// `FERRODDS_RETCODE_TIMEOUT`.
#[no_mangle]
pub extern "C" fn ferrodds_write(
    writer: FerroddsWriter,
    data: *const u8,
    len: usize,
) -> FerroddsRetcode {
    guard("ferrodds_write", || {
        self::writer(writer)?
            .writer
            .write(bytes(data, len, "data")?, None, false)
    })
}

/// `ferrodds_write` with an explicit source timestamp (nanoseconds since the Unix epoch).
#[no_mangle]
pub extern "C" fn ferrodds_write_with_timestamp(
    writer: FerroddsWriter,
    data: *const u8,
    len: usize,
    timestamp_ns: i64,
) -> FerroddsRetcode {
    guard("ferrodds_write_with_timestamp", || {
        self::writer(writer)?.writer.write(
            bytes(data, len, "data")?,
            Some(Time::from_nanos(timestamp_ns)),
            false,
        )
    })
}

/// `ferrodds_write`, then sends whatever batching holds at once.
#[no_mangle]
pub extern "C" fn ferrodds_write_flush(
    writer: FerroddsWriter,
    data: *const u8,
    len: usize,
) -> FerroddsRetcode {
    guard("ferrodds_write_flush", || {
        self::writer(writer)?
            .writer
            .write(bytes(data, len, "data")?, None, true)
    })
}

/// Sends every sample batching holds now.
#[no_mangle]
pub extern "C" fn ferrodds_writer_flush(writer: FerroddsWriter) -> FerroddsRetcode {
    guard("ferrodds_writer_flush", || {
        self::writer(writer)?.writer.flush()
    })
}

fn instance_op(
    writer: FerroddsWriter,
    op: InstanceOp,
    data: *const u8,
    len: usize,
) -> CResult<FerroddsInstanceHandle> {
    let h = self::writer(writer)?
        .writer
        .instance(op, bytes(data, len, "data")?)?;
    Ok(FerroddsInstanceHandle { value: h.0 })
}

/// Registers the instance whose key the serialized sample `data` holds (only its key
/// members are read: a sample truncated after them is enough) and stores its handle.
#[no_mangle]
pub extern "C" fn ferrodds_register_instance(
    writer: FerroddsWriter,
    data: *const u8,
    len: usize,
    handle: *mut FerroddsInstanceHandle,
) -> FerroddsRetcode {
    guard("ferrodds_register_instance", || {
        let result = out(handle, "handle")?;
        *result = instance_op(writer, InstanceOp::Register, data, len)?;
        Ok(())
    })
}

/// Stores the handle of the instance whose key `data` holds if the writer knows it,
/// else the nil handle (all zeros).
#[no_mangle]
pub extern "C" fn ferrodds_lookup_instance(
    writer: FerroddsWriter,
    data: *const u8,
    len: usize,
    handle: *mut FerroddsInstanceHandle,
) -> FerroddsRetcode {
    guard("ferrodds_lookup_instance", || {
        let result = out(handle, "handle")?;
        *result = instance_op(writer, InstanceOp::Lookup, data, len)?;
        Ok(())
    })
}

/// Unregisters the instance whose key `data` holds (`FERRODDS_RETCODE_PRECONDITION_NOT_MET`
/// when it is not registered).
#[no_mangle]
pub extern "C" fn ferrodds_unregister_instance(
    writer: FerroddsWriter,
    data: *const u8,
    len: usize,
) -> FerroddsRetcode {
    guard("ferrodds_unregister_instance", || {
        instance_op(writer, InstanceOp::Unregister, data, len).map(drop)
    })
}

/// Disposes the instance whose key `data` holds (readers see
/// `FERRODDS_INSTANCE_STATE_NOT_ALIVE_DISPOSED`). Unkeyed types:
/// `FERRODDS_RETCODE_PRECONDITION_NOT_MET`.
#[no_mangle]
pub extern "C" fn ferrodds_dispose(
    writer: FerroddsWriter,
    data: *const u8,
    len: usize,
) -> FerroddsRetcode {
    guard("ferrodds_dispose", || {
        instance_op(writer, InstanceOp::Dispose, data, len).map(drop)
    })
}

/// Blocks until every matched reliable reader acknowledged everything written, or
/// returns `FERRODDS_RETCODE_TIMEOUT`.
#[no_mangle]
pub extern "C" fn ferrodds_writer_wait_for_acknowledgments(
    writer: FerroddsWriter,
    timeout_ns: i64,
) -> FerroddsRetcode {
    guard("ferrodds_writer_wait_for_acknowledgments", || {
        let t = timeout(timeout_ns)?;
        self::writer(writer)?.writer.wait_for_acknowledgments(t)
    })
}

/// Blocks until at least `count` readers are matched, or returns
/// `FERRODDS_RETCODE_TIMEOUT`.
#[no_mangle]
pub extern "C" fn ferrodds_writer_wait_for_matched(
    writer: FerroddsWriter,
    count: u32,
    timeout_ns: i64,
) -> FerroddsRetcode {
    guard("ferrodds_writer_wait_for_matched", || {
        let t = timeout(timeout_ns)?;
        if self::writer(writer)?.writer.wait_for_matched(count, t) {
            Ok(())
        } else {
            Err(CError::Timeout)
        }
    })
}

/// Stores the PUBLICATION_MATCHED status (and resets its change counts).
#[no_mangle]
pub extern "C" fn ferrodds_writer_get_publication_matched_status(
    writer: FerroddsWriter,
    status: *mut FerroddsPublicationMatchedStatus,
) -> FerroddsRetcode {
    guard("ferrodds_writer_get_publication_matched_status", || {
        let result = out(status, "status")?;
        *result = pub_matched(&self::writer(writer)?.writer.matched_status());
        Ok(())
    })
}

/// Stores the OFFERED_INCOMPATIBLE_QOS status.
#[no_mangle]
pub extern "C" fn ferrodds_writer_get_offered_incompatible_qos_status(
    writer: FerroddsWriter,
    status: *mut FerroddsIncompatibleQosStatus,
) -> FerroddsRetcode {
    guard(
        "ferrodds_writer_get_offered_incompatible_qos_status",
        || {
            let result = out(status, "status")?;
            *result = offered(&self::writer(writer)?.writer.incompatible_status());
            Ok(())
        },
    )
}

/// Installs `*listener` (copied) on the writer, replacing any previous one; NULL removes
/// it.
#[no_mangle]
pub extern "C" fn ferrodds_writer_set_listener(
    writer: FerroddsWriter,
    listener: *const FerroddsWriterListener,
) -> FerroddsRetcode {
    guard("ferrodds_writer_set_listener", || {
        let w = self::writer(writer)?;
        let l: Option<Arc<dyn DataWriterListener>> = if listener.is_null() {
            None
        } else {
            Some(writer_listener(writer, input(listener, "listener")?))
        };
        w.writer.set_listener(l);
        Ok(())
    })
}

/// Creates a reader on `topic` (a topic of `participant`). `qos` NULL: the reader
/// defaults. `listener` (copied; NULL: none) is installed before the reader can match,
/// so no event is missed.
#[no_mangle]
pub extern "C" fn ferrodds_reader_create(
    participant: FerroddsParticipant,
    topic: FerroddsTopic,
    qos: *const FerroddsQos,
    listener: *const FerroddsReaderListener,
    reader: *mut FerroddsReader,
) -> FerroddsRetcode {
    guard("ferrodds_reader_create", || {
        let result = out(reader, "reader")?;
        let p = self::participant(participant)?;
        let t = self::topic(topic)?;
        if t.participant != participant {
            return Err(CError::BadParameter(
                "topic: belongs to another participant".into(),
            ));
        }
        let (q, partition) = if qos.is_null() {
            (DataReaderQos::default(), Vec::new())
        } else {
            reader_qos(input(qos, "qos")?)?
        };
        let listener = if listener.is_null() {
            None
        } else {
            Some(*input(listener, "listener")?)
        };
        *result = handles::insert_with(participant, |h| {
            let r = ReaderEntry::create(&p, &t, q, partition, |r| {
                if let Some(l) = listener {
                    let l = reader_listener(h, &l);
                    r.set_listener(Some(Arc::clone(&l)));
                    // A writer matched during the creation, before the listener was
                    // installed, is reported now.
                    let s = r.matched_status();
                    if s.total_count > 0 {
                        l.on_subscription_matched(&s);
                    }
                }
            })?;
            Ok(Entity::Reader(Arc::new(r)))
        })?;
        Ok(())
    })
}

/// Deletes a reader.
#[no_mangle]
pub extern "C" fn ferrodds_reader_delete(reader: FerroddsReader) -> FerroddsRetcode {
    guard("ferrodds_reader_delete", || {
        handles::remove_if(reader, "reader", |e| matches!(e, Entity::Reader(_)))?;
        Ok(())
    })
}

/// Takes the oldest sample into `buf` (`capacity` bytes): stores its length (0 without
/// valid data) and info. `FERRODDS_RETCODE_NO_DATA` when there is none;
/// `FERRODDS_RETCODE_BUFFER_TOO_SMALL` stores the length needed in `*len` and keeps the
/// sample for the next take. `buf` may be NULL when `capacity` is 0. The bytes are the
/// received payload: a 4-byte encapsulation header (the sender's byte order and XCDR
/// version) and the body, validated against the type.
#[no_mangle]
pub extern "C" fn ferrodds_take(
    reader: FerroddsReader,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
    info: *mut FerroddsSampleInfo,
) -> FerroddsRetcode {
    guard("ferrodds_take", || {
        let len = out(len, "len")?;
        let info = out(info, "info")?;
        let buf = slice_mut(buf, capacity, "buf")?;
        match self::reader(reader)?.take_into(buf) {
            Ok((n, i)) => {
                *len = n;
                *info = sample_info(&i);
                Ok(())
            }
            Err(CError::BufferTooSmall { need, have }) => {
                *len = need;
                Err(CError::BufferTooSmall { need, have })
            }
            Err(e) => Err(e),
        }
    })
}

fn visit(
    callback: FerroddsSampleCallback,
    user: *mut c_void,
) -> CResult<impl FnMut(&[u8], &SampleInfo)> {
    let f = callback.ok_or_else(|| null("callback"))?;
    let user = User(user);
    Ok(move |data: &[u8], info: &SampleInfo| {
        let i = sample_info(info);
        // SAFETY: `f` is the caller's callback with the declared signature; `data` and
        // `i` live across the call (the header says the bytes are valid during the call
        // only); `user` is the caller's own pointer.
        unsafe { f(data.as_ptr(), data.len(), &i, user.0) };
    })
}

/// Takes at most `max` samples (0: all), calling `callback` for each with the bytes
/// lent in place (no copy into a caller buffer), and stores how many in `*count`
/// (NULL: not stored). `FERRODDS_RETCODE_NO_DATA` when there were none.
#[no_mangle]
pub extern "C" fn ferrodds_take_each(
    reader: FerroddsReader,
    max: usize,
    callback: FerroddsSampleCallback,
    user: *mut c_void,
    count: *mut usize,
) -> FerroddsRetcode {
    guard("ferrodds_take_each", || {
        let mut f = visit(callback, user)?;
        let r = self::reader(reader)?;
        let mut n = 0;
        // A sample a too-small take kept goes first; the callback runs with no lock held
        // (it may take from this reader too), then the buffer goes back for reuse.
        let kept = {
            let mut stash = r.stash.lock().unwrap_or_else(|e| e.into_inner());
            stash
                .info
                .take()
                .map(|i| (std::mem::take(&mut stash.bytes), i))
        };
        if let Some((bytes, info)) = kept {
            f(&bytes, &info);
            n += 1;
            let mut stash = r.stash.lock().unwrap_or_else(|e| e.into_inner());
            if stash.info.is_none() && stash.bytes.capacity() < bytes.capacity() {
                stash.bytes = bytes;
            }
        }
        let max = if max == 0 { usize::MAX } else { max };
        if n < max {
            n += r.reader.take_each(max - n, &mut f)?;
        }
        if !count.is_null() {
            *out(count, "count")? = n;
        }
        if n == 0 {
            return Err(CError::NoData);
        }
        Ok(())
    })
}

/// Reads every cached sample, leaving them in the cache marked read, calling `callback`
/// for each; stores how many in `*count` (NULL: not stored). `FERRODDS_RETCODE_NO_DATA`
/// when the cache is empty.
#[no_mangle]
pub extern "C" fn ferrodds_read_each(
    reader: FerroddsReader,
    callback: FerroddsSampleCallback,
    user: *mut c_void,
    count: *mut usize,
) -> FerroddsRetcode {
    guard("ferrodds_read_each", || {
        let mut f = visit(callback, user)?;
        let n = self::reader(reader)?.reader.read_each(&mut f)?;
        if !count.is_null() {
            *out(count, "count")? = n;
        }
        if n == 0 {
            return Err(CError::NoData);
        }
        Ok(())
    })
}

/// Blocks until the reader has a sample not read yet, or returns
/// `FERRODDS_RETCODE_TIMEOUT`.
#[no_mangle]
pub extern "C" fn ferrodds_reader_wait_for_data(
    reader: FerroddsReader,
    timeout_ns: i64,
) -> FerroddsRetcode {
    guard("ferrodds_reader_wait_for_data", || {
        let t = timeout(timeout_ns)?;
        let r = self::reader(reader)?;
        if r.stash
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .info
            .is_some()
            || r.reader.wait_for_data(t)?
        {
            Ok(())
        } else {
            Err(CError::Timeout)
        }
    })
}

/// Blocks until at least `count` writers are matched, or returns
/// `FERRODDS_RETCODE_TIMEOUT`.
#[no_mangle]
pub extern "C" fn ferrodds_reader_wait_for_matched(
    reader: FerroddsReader,
    count: u32,
    timeout_ns: i64,
) -> FerroddsRetcode {
    guard("ferrodds_reader_wait_for_matched", || {
        let t = timeout(timeout_ns)?;
        if self::reader(reader)?.reader.wait_for_matched(count, t) {
            Ok(())
        } else {
            Err(CError::Timeout)
        }
    })
}

/// Stores the SUBSCRIPTION_MATCHED status (and resets its change counts).
#[no_mangle]
pub extern "C" fn ferrodds_reader_get_subscription_matched_status(
    reader: FerroddsReader,
    status: *mut FerroddsSubscriptionMatchedStatus,
) -> FerroddsRetcode {
    guard("ferrodds_reader_get_subscription_matched_status", || {
        let result = out(status, "status")?;
        *result = sub_matched(&self::reader(reader)?.reader.matched_status());
        Ok(())
    })
}

/// Stores the REQUESTED_INCOMPATIBLE_QOS status.
#[no_mangle]
pub extern "C" fn ferrodds_reader_get_requested_incompatible_qos_status(
    reader: FerroddsReader,
    status: *mut FerroddsIncompatibleQosStatus,
) -> FerroddsRetcode {
    guard(
        "ferrodds_reader_get_requested_incompatible_qos_status",
        || {
            let result = out(status, "status")?;
            *result = requested(&self::reader(reader)?.reader.incompatible_status());
            Ok(())
        },
    )
}

/// Stores the SAMPLE_LOST status.
#[no_mangle]
pub extern "C" fn ferrodds_reader_get_sample_lost_status(
    reader: FerroddsReader,
    status: *mut FerroddsSampleLostStatus,
) -> FerroddsRetcode {
    guard("ferrodds_reader_get_sample_lost_status", || {
        let result = out(status, "status")?;
        *result = lost(&self::reader(reader)?.reader.lost_status());
        Ok(())
    })
}

/// Stores how many received samples were dropped because their bytes were not a valid
/// sample of the topic type.
#[no_mangle]
pub extern "C" fn ferrodds_reader_get_invalid_sample_count(
    reader: FerroddsReader,
    count: *mut u64,
) -> FerroddsRetcode {
    guard("ferrodds_reader_get_invalid_sample_count", || {
        let result = out(count, "count")?;
        *result = self::reader(reader)?.reader.undecodable();
        Ok(())
    })
}

/// Installs `*listener` (copied) on the reader, replacing any previous one; NULL removes
/// it.
#[no_mangle]
pub extern "C" fn ferrodds_reader_set_listener(
    reader: FerroddsReader,
    listener: *const FerroddsReaderListener,
) -> FerroddsRetcode {
    guard("ferrodds_reader_set_listener", || {
        let r = self::reader(reader)?;
        let l: Option<Arc<dyn DataReaderListener>> = if listener.is_null() {
            None
        } else {
            Some(reader_listener(reader, input(listener, "listener")?))
        };
        r.reader.set_listener(l);
        Ok(())
    })
}

/// Creates a wait set.
#[no_mangle]
pub extern "C" fn ferrodds_waitset_create(waitset: *mut FerroddsWaitSet) -> FerroddsRetcode {
    guard("ferrodds_waitset_create", || {
        let result = out(waitset, "waitset")?;
        *result = handles::insert(Entity::WaitSet(Arc::new(WaitSetEntry::new())), 0)?;
        Ok(())
    })
}

/// Deletes a wait set.
#[no_mangle]
pub extern "C" fn ferrodds_waitset_delete(waitset: FerroddsWaitSet) -> FerroddsRetcode {
    guard("ferrodds_waitset_delete", || {
        handles::remove_if(waitset, "waitset", |e| matches!(e, Entity::WaitSet(_)))?;
        Ok(())
    })
}

/// Attaches the read condition of `reader` (triggered while it has unread samples);
/// `token` is reported by `ferrodds_waitset_wait` when it triggers.
#[no_mangle]
pub extern "C" fn ferrodds_waitset_attach_reader(
    waitset: FerroddsWaitSet,
    reader: FerroddsReader,
    token: usize,
) -> FerroddsRetcode {
    guard("ferrodds_waitset_attach_reader", || {
        let ws = self::waitset(waitset)?;
        let c = self::reader(reader)?.reader.read_condition();
        ws.attach(c.into(), token, reader);
        Ok(())
    })
}

/// Attaches the status condition of `entity` (a writer or a reader) with the enabled
/// statuses `mask` (`FERRODDS_STATUS_*` bits): triggered while one of them changed and was
/// not read since (reading the status resets it).
#[no_mangle]
pub extern "C" fn ferrodds_waitset_attach_status(
    waitset: FerroddsWaitSet,
    entity: u64,
    mask: u32,
    token: usize,
) -> FerroddsRetcode {
    guard("ferrodds_waitset_attach_status", || {
        let ws = self::waitset(waitset)?;
        let c = match handles::get(entity, "entity")? {
            Entity::Writer(w) => w.writer.status_condition(),
            Entity::Reader(r) => r.reader.status_condition(),
            e => {
                return Err(CError::BadParameter(format!(
                    "entity: a {} has no status condition",
                    e.kind()
                )))
            }
        };
        c.set_enabled_statuses(StatusMask(mask));
        ws.attach(c.into(), token, entity);
        Ok(())
    })
}

/// Attaches a guard condition (triggered while its trigger value is set).
#[no_mangle]
pub extern "C" fn ferrodds_waitset_attach_guard(
    waitset: FerroddsWaitSet,
    guard_condition: FerroddsGuardCondition,
    token: usize,
) -> FerroddsRetcode {
    guard("ferrodds_waitset_attach_guard", || {
        let ws = self::waitset(waitset)?;
        match handles::get(guard_condition, "guard_condition")? {
            Entity::Guard(g) => {
                ws.attach((*g).clone().into(), token, guard_condition);
                Ok(())
            }
            e => Err(CError::BadParameter(format!(
                "guard_condition: the handle is a {}",
                e.kind()
            ))),
        }
    })
}

/// Detaches every condition attached for `entity` (`FERRODDS_RETCODE_BAD_PARAMETER` when
/// none is). Works after the entity was deleted.
#[no_mangle]
pub extern "C" fn ferrodds_waitset_detach(
    waitset: FerroddsWaitSet,
    entity: u64,
) -> FerroddsRetcode {
    guard("ferrodds_waitset_detach", || {
        if self::waitset(waitset)?.detach(entity)? == 0 {
            return Err(CError::BadParameter(
                "entity: nothing of it is attached".into(),
            ));
        }
        Ok(())
    })
}

/// Blocks until a condition triggers or `timeout_ns` passes
/// (`FERRODDS_RETCODE_TIMEOUT`). Stores the tokens of the conditions triggered on return
/// into `tokens` (up to `capacity`; NULL when 0) and their number in `*count` (NULL: not
/// stored; it may exceed `capacity`). Attaching or detaching from another thread waits
/// until the wait returns.
#[no_mangle]
pub extern "C" fn ferrodds_waitset_wait(
    waitset: FerroddsWaitSet,
    timeout_ns: i64,
    tokens: *mut usize,
    capacity: usize,
    count: *mut usize,
) -> FerroddsRetcode {
    guard("ferrodds_waitset_wait", || {
        let t = timeout(timeout_ns)?;
        let ws = self::waitset(waitset)?;
        let tokens = slice_mut(tokens, capacity, "tokens")?;
        let n = ws.wait(t, tokens)?;
        if !count.is_null() {
            *out(count, "count")? = n;
        }
        Ok(())
    })
}

/// Creates a guard condition (trigger value false).
#[no_mangle]
pub extern "C" fn ferrodds_guard_condition_create(
    guard_condition: *mut FerroddsGuardCondition,
) -> FerroddsRetcode {
    guard("ferrodds_guard_condition_create", || {
        let result = out(guard_condition, "guard_condition")?;
        *result = handles::insert(Entity::Guard(Arc::new(GuardCondition::new())), 0)?;
        Ok(())
    })
}

/// Sets the trigger value (non-zero: triggered; wakes wait sets it is attached to).
#[no_mangle]
pub extern "C" fn ferrodds_guard_condition_set(
    guard_condition: FerroddsGuardCondition,
    triggered: i32,
) -> FerroddsRetcode {
    guard("ferrodds_guard_condition_set", || {
        match handles::get(guard_condition, "guard_condition")? {
            Entity::Guard(g) => {
                g.set_trigger_value(triggered != 0);
                Ok(())
            }
            e => Err(CError::BadParameter(format!(
                "guard_condition: the handle is a {}",
                e.kind()
            ))),
        }
    })
}

/// Deletes a guard condition.
#[no_mangle]
pub extern "C" fn ferrodds_guard_condition_delete(
    guard_condition: FerroddsGuardCondition,
) -> FerroddsRetcode {
    guard("ferrodds_guard_condition_delete", || {
        handles::remove_if(guard_condition, "guard_condition", |e| {
            matches!(e, Entity::Guard(_))
        })?;
        Ok(())
    })
}
