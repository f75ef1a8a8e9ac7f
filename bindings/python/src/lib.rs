//! FerroDDS for Python: the native module `ferrodds._ferrodds` behind the `ferrodds` package.
//!
//! # Contract
//!
//! * **Entities.** `DomainParticipant`, `Topic`, `DataWriter`, `DataReader` wrap the Rust
//!   entities. `close()` (or leaving a `with` block) deletes an entity; using it afterwards
//!   raises `AlreadyDeletedError`, as does using a writer or reader whose participant was
//!   closed. Garbage collection closes what was not closed.
//! * **Types.** A topic type is a Python class decorated with `@ferrodds.topic_type`, which
//!   records a description (type name, extensibility, members with CDR kinds and key
//!   flags) once; this module reads it when the topic is created and then serializes and
//!   deserializes every sample in Rust with `ferrodds-cdr` (XCDR1 little-endian on the
//!   wire; XCDR1 and XCDR2 of either byte order accepted). The runtime learns the type name
//!   and key through [`ferrodds::DynamicTypeSupport`].
//! * **GIL.** Held while converting between Python objects and CDR; released while a write
//!   sends, while waiting (`wait`, `wait_for_matched`, `wait_for_acknowledgments`) and
//!   while a participant, writer or reader is deleted. The runtime's own threads never
//!   take it.
//! * **Listeners.** A reader listener's callbacks run on one dispatcher thread per reader
//!   (not on the runtime's receive thread): the runtime only flags the event; the
//!   dispatcher takes the GIL for the duration of each call. An exception raised by a
//!   callback is reported through `sys.unraisablehook`, counted in
//!   `DataReader.listener_errors`, and does not stop the dispatcher or the participant.
//! * **Errors.** Every runtime error raises a subclass of `DdsError` mirroring the Rust
//!   `ferrodds::DdsError` variant; wrong argument types raise `TypeError`, out-of-range
//!   values `OverflowError`/`ValueError`, each naming the member.

mod codec;

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use ferrodds::{
    DataReaderListener, DataReaderQos, DataWriterListener, DataWriterQos, DdsError as RsError,
    Durability, History, InstanceState, Ownership, PublicationMatchedStatus, PublisherQos,
    Reliability, ReliabilityKind, ResourceLimits, SampleState, SubscriberQos,
    SubscriptionMatchedStatus, TopicQos,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType, PyWeakrefReference};

use codec::{DynSample, SharedDesc, TypeDesc};

create_exception!(
    _ferrodds,
    DdsError,
    PyException,
    "Base class of every FerroDDS error (mirrors ferrodds::DdsError)."
);
create_exception!(_ferrodds, InternalError, DdsError, "RETCODE_ERROR.");
create_exception!(
    _ferrodds,
    BadParameterError,
    DdsError,
    "RETCODE_BAD_PARAMETER."
);
create_exception!(
    _ferrodds,
    UnsupportedError,
    DdsError,
    "RETCODE_UNSUPPORTED."
);
create_exception!(
    _ferrodds,
    OutOfResourcesError,
    DdsError,
    "RETCODE_OUT_OF_RESOURCES."
);
create_exception!(
    _ferrodds,
    PreconditionNotMetError,
    DdsError,
    "RETCODE_PRECONDITION_NOT_MET."
);
create_exception!(_ferrodds, DdsTimeoutError, DdsError, "RETCODE_TIMEOUT.");
create_exception!(
    _ferrodds,
    AlreadyDeletedError,
    DdsError,
    "RETCODE_ALREADY_DELETED: the entity (or its participant) was closed."
);
create_exception!(_ferrodds, NotEnabledError, DdsError, "RETCODE_NOT_ENABLED.");
create_exception!(
    _ferrodds,
    IllegalOperationError,
    DdsError,
    "RETCODE_ILLEGAL_OPERATION."
);
create_exception!(
    _ferrodds,
    SerializationError,
    DdsError,
    "A sample could not be serialized or deserialized."
);
create_exception!(
    _ferrodds,
    TransportError,
    DdsError,
    "A transport (UDP, TCP, TLS, shared memory), capture or operating-system failure."
);

/// Maps a Rust error onto its Python exception class.
fn to_py(e: RsError) -> PyErr {
    let msg = e.to_string();
    match e {
        RsError::Error { .. } => InternalError::new_err(msg),
        RsError::BadParameter { .. } => BadParameterError::new_err(msg),
        RsError::Unsupported { .. } => UnsupportedError::new_err(msg),
        RsError::OutOfResources { .. } => OutOfResourcesError::new_err(msg),
        RsError::PreconditionNotMet { .. } => PreconditionNotMetError::new_err(msg),
        RsError::Timeout => DdsTimeoutError::new_err(msg),
        RsError::AlreadyDeleted => AlreadyDeletedError::new_err(msg),
        RsError::NotEnabled => NotEnabledError::new_err(msg),
        RsError::IllegalOperation { .. } => IllegalOperationError::new_err(msg),
        RsError::Serialization(_) => SerializationError::new_err(msg),
        RsError::Engine(_) | RsError::Write(_) => InternalError::new_err(msg),
        _ => TransportError::new_err(msg),
    }
}

fn deleted(what: &str) -> PyErr {
    AlreadyDeletedError::new_err(format!("{what} is closed"))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A timeout in seconds (`None` = forever) as a `Duration`.
fn timeout(secs: Option<f64>) -> PyResult<Duration> {
    match secs {
        None => Ok(Duration::from_secs(365 * 24 * 3600)),
        Some(s) if s.is_finite() && s >= 0.0 => Ok(Duration::from_secs_f64(s.min(3.0e7))),
        Some(s) => Err(PyValueError::new_err(format!(
            "timeout must be a non-negative number of seconds, got {s}"
        ))),
    }
}

// ---------------------------------------------------------------------------------------
// Participant

/// A DDS domain participant.
#[pyclass(module = "ferrodds._ferrodds", frozen)]
struct DomainParticipant {
    inner: RwLock<Option<Arc<ferrodds::DomainParticipant>>>,
    domain_id: u32,
}

impl DomainParticipant {
    fn get(&self) -> PyResult<Arc<ferrodds::DomainParticipant>> {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| deleted("DomainParticipant"))
    }
}

#[pymethods]
impl DomainParticipant {
    #[new]
    #[pyo3(signature = (domain_id=0, *, interface=None, peers=None, multicast=None, shared_memory=None, use_env=true))]
    fn new(
        py: Python<'_>,
        domain_id: u32,
        interface: Option<String>,
        peers: Option<Vec<String>>,
        multicast: Option<bool>,
        shared_memory: Option<bool>,
        use_env: bool,
    ) -> PyResult<Self> {
        if domain_id > 232 {
            return Err(BadParameterError::new_err(format!(
                "domain_id {domain_id} is out of range 0..=232"
            )));
        }
        let mut cfg = ferrodds::Config::default();
        if use_env {
            cfg = cfg.with_env_overrides().map_err(to_py)?;
        }
        if let Some(i) = interface {
            cfg = cfg.interface(ferrodds::Interface::parse(&i));
        }
        if let Some(p) = peers {
            let mut addrs = Vec::with_capacity(p.len());
            for a in p {
                addrs.push(a.parse::<std::net::Ipv4Addr>().map_err(|_| {
                    BadParameterError::new_err(format!("peer {a:?} is not an IPv4 address"))
                })?);
            }
            cfg = cfg.initial_peers(addrs);
        }
        if let Some(m) = multicast {
            cfg = cfg.multicast(m);
        }
        if let Some(s) = shared_memory {
            cfg = cfg.shared_memory(s);
        }
        let p = py
            .detach(|| ferrodds::DomainParticipant::with_config(domain_id, cfg))
            .map_err(to_py)?;
        Ok(Self {
            inner: RwLock::new(Some(Arc::new(p))),
            domain_id,
        })
    }

    /// The domain id.
    #[getter]
    fn domain_id(&self) -> u32 {
        self.domain_id
    }

    /// The participant's GUID prefix (12 bytes).
    #[getter]
    fn guid_prefix<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.get()?.guid_prefix().0))
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Number of remote participants discovered.
    fn discovered_participants(&self) -> PyResult<usize> {
        Ok(self.get()?.discovered_participants().len())
    }

    /// Blocks until `n` remote participants are known or `timeout` seconds passed.
    #[pyo3(signature = (n, timeout=None))]
    fn wait_for_participants(
        &self,
        py: Python<'_>,
        n: usize,
        timeout: Option<f64>,
    ) -> PyResult<bool> {
        let p = self.get()?;
        let t = self::timeout(timeout)?;
        Ok(py.detach(|| p.wait_for_participants(n, t)))
    }

    /// Deletes the participant: its writers and readers stop working (their operations
    /// raise `AlreadyDeletedError`). Idempotent.
    fn close(&self, py: Python<'_>) {
        let p = self
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(p) = p {
            py.detach(move || drop(p));
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "DomainParticipant(domain_id={}, closed={})",
            self.domain_id,
            self.closed()
        )
    }
}

// ---------------------------------------------------------------------------------------
// Topic

/// The runtime topic of one of the three sample shapes.
#[derive(Clone)]
enum RsTopic {
    Unkeyed(ferrodds::Topic<DynSample<false, false>>),
    SmallKey(ferrodds::Topic<DynSample<true, true>>),
    LargeKey(ferrodds::Topic<DynSample<true, false>>),
}

/// A topic: a name and a `@topic_type` class.
#[pyclass(module = "ferrodds._ferrodds", frozen)]
struct Topic {
    participant: Py<DomainParticipant>,
    topic: RsTopic,
    desc: SharedDesc,
    data_type: Py<PyType>,
    name: String,
}

#[pymethods]
impl Topic {
    #[new]
    fn new(
        participant: Bound<'_, DomainParticipant>,
        name: String,
        data_type: Bound<'_, PyType>,
    ) -> PyResult<Self> {
        let desc = Arc::new(TypeDesc::from_class(data_type.as_any())?);
        let p = participant.get().get()?;
        let support = |keyed: bool| {
            let d = Arc::clone(&desc);
            ferrodds::DynamicTypeSupport {
                type_name: desc.type_name.clone(),
                key_hash: keyed.then(|| {
                    Arc::new(move |alive: bool, payload: &[u8]| {
                        codec::key_hash_of_payload(&d, alive, payload)
                    })
                        as Arc<dyn Fn(bool, &[u8]) -> Option<[u8; 16]> + Send + Sync>
                }),
            }
        };
        let topic = match (desc.keyed, desc.small_key) {
            (false, _) => RsTopic::Unkeyed(
                p.create_topic_dynamic(&name, support(false), TopicQos::default())
                    .map_err(to_py)?,
            ),
            (true, true) => RsTopic::SmallKey(
                p.create_topic_dynamic(&name, support(true), TopicQos::default())
                    .map_err(to_py)?,
            ),
            (true, false) => RsTopic::LargeKey(
                p.create_topic_dynamic(&name, support(true), TopicQos::default())
                    .map_err(to_py)?,
            ),
        };
        Ok(Self {
            participant: participant.unbind(),
            topic,
            desc,
            data_type: data_type.unbind(),
            name,
        })
    }

    /// The topic name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The participant the topic belongs to.
    #[getter]
    fn participant(&self, py: Python<'_>) -> Py<DomainParticipant> {
        self.participant.clone_ref(py)
    }

    /// The DDS type name announced in discovery.
    #[getter]
    fn type_name(&self) -> &str {
        &self.desc.type_name
    }

    /// The `@topic_type` class of the samples.
    #[getter]
    fn data_type(&self, py: Python<'_>) -> Py<PyType> {
        self.data_type.clone_ref(py)
    }

    /// Whether the type has key members.
    #[getter]
    fn keyed(&self) -> bool {
        self.desc.keyed
    }

    fn __repr__(&self) -> String {
        format!(
            "Topic({:?}, type_name={:?})",
            self.name, self.desc.type_name
        )
    }
}

/// Writers and readers are created in the participant of their topic.
fn check_same_participant(
    participant: &Bound<'_, DomainParticipant>,
    topic: &Bound<'_, Topic>,
) -> PyResult<()> {
    if topic
        .get()
        .participant
        .bind(participant.py())
        .is(participant)
    {
        Ok(())
    } else {
        Err(BadParameterError::new_err(format!(
            "topic {:?} belongs to another participant",
            topic.get().name
        )))
    }
}

// ---------------------------------------------------------------------------------------
// QoS

/// Reads the Python `Qos` object (see `ferrodds/qos.py`): every attribute is optional.
struct PyQos {
    reliability: Option<Reliability>,
    durability: Option<Durability>,
    history: Option<History>,
    limits: Option<ResourceLimits>,
    deadline: Option<Option<Duration>>,
    ownership: Option<Ownership>,
    partition: Vec<String>,
}

fn read_qos(qos: Option<&Bound<'_, PyAny>>) -> PyResult<PyQos> {
    let mut out = PyQos {
        reliability: None,
        durability: None,
        history: None,
        limits: None,
        deadline: None,
        ownership: None,
        partition: Vec::new(),
    };
    let Some(q) = qos else { return Ok(out) };
    if !q.hasattr("_spec")? {
        return Err(PyTypeError::new_err(format!(
            "qos must be a ferrodds.Qos, got {}",
            q.get_type().name()?
        )));
    }
    // Qos._spec validates its fields (TypeError/ValueError naming the field).
    let spec = q.call_method0("_spec")?;
    let d = spec.cast::<PyDict>()?;
    let get = |k: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        Ok(d.get_item(k)?.filter(|v| !v.is_none()))
    };
    if let Some(v) = get("reliability")? {
        let kind: String = v.extract()?;
        let mbt = timeout(Some(
            get("max_blocking_time")?.map_or(Ok(0.1), |v| v.extract())?,
        ))?;
        out.reliability = Some(Reliability {
            kind: match kind.as_str() {
                "reliable" => ReliabilityKind::Reliable,
                "best_effort" => ReliabilityKind::BestEffort,
                o => return Err(PyValueError::new_err(format!("unknown reliability {o:?}"))),
            },
            max_blocking_time: mbt,
        });
    }
    if let Some(v) = get("durability")? {
        let kind: String = v.extract()?;
        out.durability = Some(match kind.as_str() {
            "volatile" => Durability::Volatile,
            "transient_local" => Durability::TransientLocal,
            o => return Err(PyValueError::new_err(format!("unknown durability {o:?}"))),
        });
    }
    if let Some(v) = get("history")? {
        let depth: i64 = v.extract()?;
        out.history = Some(match depth {
            0 => History::KeepAll,
            d if d > 0 && d <= i64::from(u32::MAX) => History::KeepLast(d as u32),
            d => {
                return Err(PyValueError::new_err(format!(
                    "history depth {d} out of range"
                )))
            }
        });
    }
    if let Some(v) = get("resource_limits")? {
        let (s, i, spi): (Option<u32>, Option<u32>, Option<u32>) = v.extract()?;
        out.limits = Some(ResourceLimits {
            max_samples: s,
            max_instances: i,
            max_samples_per_instance: spi,
        });
    }
    if let Some(v) = get("deadline")? {
        out.deadline = Some(Some(timeout(Some(v.extract()?))?));
    }
    if let Some(v) = get("ownership")? {
        let kind: String = v.extract()?;
        out.ownership = Some(match kind.as_str() {
            "shared" => Ownership::Shared,
            "exclusive" => Ownership::Exclusive,
            o => return Err(PyValueError::new_err(format!("unknown ownership {o:?}"))),
        });
    }
    if let Some(v) = get("partition")? {
        out.partition = v.extract()?;
    }
    Ok(out)
}

macro_rules! apply_qos {
    ($q:expr, $p:expr) => {{
        let mut q = $q;
        let p = $p;
        if let Some(r) = p.reliability {
            q.reliability = r;
        }
        if let Some(d) = p.durability {
            q.durability = d;
        }
        if let Some(h) = p.history {
            q.history = h;
        }
        if let Some(l) = p.limits {
            q.resource_limits = l;
        }
        if let Some(d) = p.deadline {
            q.deadline = d;
        }
        if let Some(o) = p.ownership {
            q.ownership = o;
        }
        q
    }};
}

// ---------------------------------------------------------------------------------------
// Writer

/// What the Python writer needs of a `ferrodds::DataWriter<DynSample<K, S>>`.
trait AnyWriter: Send + Sync {
    fn encode(&self, desc: &TypeDesc, obj: &Bound<'_, PyAny>) -> PyResult<Box<dyn AnySample>>;
    fn write(&self, s: &dyn AnySample, op: WriteOp) -> Result<Option<[u8; 16]>, RsError>;
    fn wait_for_matched(&self, n: u32, t: Duration) -> bool;
    fn matched_count(&self) -> u32;
    fn wait_for_acknowledgments(&self, t: Duration) -> Result<(), RsError>;
    fn set_listener(&self, l: Option<Arc<dyn DataWriterListener>>);
}

/// A serialized sample of any of the three shapes.
trait AnySample: Send + Sync {
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<const K: bool, const S: bool> AnySample for DynSample<K, S> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[derive(Clone, Copy)]
enum WriteOp {
    Write,
    Dispose,
    Unregister,
    Register,
    Lookup,
}

impl<const K: bool, const S: bool> AnyWriter for ferrodds::DataWriter<DynSample<K, S>> {
    fn encode(&self, desc: &TypeDesc, obj: &Bound<'_, PyAny>) -> PyResult<Box<dyn AnySample>> {
        let mut s = DynSample::<K, S>::default();
        codec::encode(desc, obj, &mut s)?;
        Ok(Box::new(s))
    }

    fn write(&self, s: &dyn AnySample, op: WriteOp) -> Result<Option<[u8; 16]>, RsError> {
        let s = s
            .as_any()
            .downcast_ref::<DynSample<K, S>>()
            .ok_or(RsError::Error {
                what: "sample of another shape",
            })?;
        match op {
            WriteOp::Write => self.write(s).map(|_| None),
            WriteOp::Dispose => self.dispose(s).map(|_| None),
            WriteOp::Unregister => self.unregister_instance(s).map(|_| None),
            WriteOp::Register => self.register_instance(s).map(|h| Some(h.0)),
            WriteOp::Lookup => self.lookup_instance(s).map(|h| Some(h.0)),
        }
    }

    fn wait_for_matched(&self, n: u32, t: Duration) -> bool {
        ferrodds::DataWriter::wait_for_matched(self, n, t)
    }

    fn matched_count(&self) -> u32 {
        ferrodds::DataWriter::matched_count(self)
    }

    fn wait_for_acknowledgments(&self, t: Duration) -> Result<(), RsError> {
        ferrodds::DataWriter::wait_for_acknowledgments(self, t)
    }

    fn set_listener(&self, l: Option<Arc<dyn DataWriterListener>>) {
        ferrodds::DataWriter::set_listener(self, l)
    }
}

/// A DataWriter of one topic.
#[pyclass(module = "ferrodds._ferrodds", frozen, weakref)]
struct DataWriter {
    inner: RwLock<Option<Arc<dyn AnyWriter>>>,
    topic: Py<Topic>,
    listener: Mutex<Option<ListenerThread>>,
    listener_errors: Arc<std::sync::atomic::AtomicU64>,
}

impl DataWriter {
    fn get(&self) -> PyResult<Arc<dyn AnyWriter>> {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| deleted("DataWriter"))
    }

    fn stop_listener(&self, py: Python<'_>) {
        let old = lock(&self.listener).take();
        if let Some(w) = self
            .inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            w.set_listener(None);
        }
        if let Some(t) = old {
            t.stop(py);
        }
    }

    fn op(&self, sample: &Bound<'_, PyAny>, op: WriteOp) -> PyResult<Option<[u8; 16]>> {
        let py = sample.py();
        let w = self.get()?;
        let topic = self.topic.get();
        let cls = topic.data_type.bind(py);
        if !sample.is_instance(cls)? {
            return Err(PyTypeError::new_err(format!(
                "topic {:?} carries {} samples, got {}",
                topic.name,
                cls.name()?,
                sample.get_type().name()?
            )));
        }
        let s = w.encode(&topic.desc, sample)?;
        py.detach(|| w.write(&*s, op)).map_err(to_py)
    }
}

#[pymethods]
impl DataWriter {
    #[new]
    #[pyo3(signature = (participant, topic, qos=None, listener=None))]
    fn new(
        py: Python<'_>,
        participant: Bound<'_, DomainParticipant>,
        topic: Bound<'_, Topic>,
        qos: Option<Bound<'_, PyAny>>,
        listener: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<Self>> {
        check_same_participant(&participant, &topic)?;
        let q = read_qos(qos.as_ref())?;
        let p = participant.get().get()?;
        let publisher = p
            .create_publisher(PublisherQos::with_partition(q.partition.clone()))
            .map_err(to_py)?;
        let wq = apply_qos!(DataWriterQos::default(), q);
        let t = topic.get().topic.clone();
        let w: Arc<dyn AnyWriter> = py
            .detach(|| -> Result<Arc<dyn AnyWriter>, RsError> {
                Ok(match &t {
                    RsTopic::Unkeyed(t) => Arc::new(publisher.create_datawriter(t, wq)?),
                    RsTopic::SmallKey(t) => Arc::new(publisher.create_datawriter(t, wq)?),
                    RsTopic::LargeKey(t) => Arc::new(publisher.create_datawriter(t, wq)?),
                })
            })
            .map_err(to_py)?;
        let me = Py::new(
            py,
            Self {
                inner: RwLock::new(Some(w)),
                topic: topic.unbind(),
                listener: Mutex::new(None),
                listener_errors: Arc::default(),
            },
        )?;
        if let Some(l) = listener {
            Self::set_listener(me.bind(py), Some(l))?;
        }
        Ok(me)
    }

    /// Sets (or with `None` removes) the listener: an object with
    /// `on_publication_matched(writer, current_count)`. It runs on a dispatcher thread of
    /// this writer, holding the GIL only for the call.
    #[pyo3(signature = (listener))]
    fn set_listener(slf: &Bound<'_, Self>, listener: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        me.stop_listener(py);
        let Some(listener) = listener else {
            return Ok(());
        };
        if !listener.hasattr("on_publication_matched")? {
            return Err(PyTypeError::new_err(
                "listener must have on_publication_matched(writer, current_count)",
            ));
        }
        let w = me.get()?;
        let dispatch = Arc::new(Dispatch::default());
        let thread = spawn_dispatcher(
            slf.as_any(),
            &listener,
            "on_publication_matched",
            false,
            Arc::clone(&me.listener_errors),
            Arc::clone(&dispatch),
        )?;
        *lock(&me.listener) = Some(ListenerThread {
            dispatch: Arc::clone(&dispatch),
            thread: Some(thread),
        });
        w.set_listener(Some(Arc::new(Flagger(dispatch))));
        Ok(())
    }

    /// Exceptions raised by listener callbacks so far.
    #[getter]
    fn listener_errors(&self) -> u64 {
        self.listener_errors
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The topic.
    #[getter]
    fn topic(&self, py: Python<'_>) -> Py<Topic> {
        self.topic.clone_ref(py)
    }

    /// Writes a sample (an instance of the topic's type).
    fn write(&self, sample: &Bound<'_, PyAny>) -> PyResult<()> {
        self.op(sample, WriteOp::Write).map(|_| ())
    }

    /// Disposes the instance whose key members `sample` carries (keyed types).
    fn dispose(&self, sample: &Bound<'_, PyAny>) -> PyResult<()> {
        self.op(sample, WriteOp::Dispose).map(|_| ())
    }

    /// Unregisters the instance whose key members `sample` carries (keyed types).
    fn unregister_instance(&self, sample: &Bound<'_, PyAny>) -> PyResult<()> {
        self.op(sample, WriteOp::Unregister).map(|_| ())
    }

    /// Registers the instance of `sample`; returns its 16-byte handle (the key hash).
    fn register_instance<'py>(&self, sample: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let h = self.op(sample, WriteOp::Register)?.unwrap_or_default();
        Ok(PyBytes::new(sample.py(), &h))
    }

    /// The handle of the instance of `sample` if the writer knows it, else 16 zero bytes.
    fn lookup_instance<'py>(&self, sample: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let h = self.op(sample, WriteOp::Lookup)?.unwrap_or_default();
        Ok(PyBytes::new(sample.py(), &h))
    }

    /// Blocks until at least `n` readers matched or `timeout` seconds passed.
    #[pyo3(signature = (n=1, timeout=None))]
    fn wait_for_matched(&self, py: Python<'_>, n: u32, timeout: Option<f64>) -> PyResult<bool> {
        let w = self.get()?;
        let t = self::timeout(timeout)?;
        Ok(py.detach(|| w.wait_for_matched(n, t)))
    }

    /// Number of matched readers.
    #[getter]
    fn matched_count(&self) -> PyResult<u32> {
        Ok(self.get()?.matched_count())
    }

    /// Blocks until every matched reliable reader acknowledged everything written;
    /// raises `DdsTimeoutError` after `timeout` seconds.
    #[pyo3(signature = (timeout=None))]
    fn wait_for_acknowledgments(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let w = self.get()?;
        let t = self::timeout(timeout)?;
        py.detach(|| w.wait_for_acknowledgments(t)).map_err(to_py)
    }

    /// Deletes the writer (remote readers see it unmatched) and stops its listener.
    /// Idempotent.
    fn close(&self, py: Python<'_>) {
        self.stop_listener(py);
        let w = self
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(w) = w {
            py.detach(move || drop(w));
        }
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }
}

// ---------------------------------------------------------------------------------------
// Reader

/// A received sample: raw body (decoded to a Python object with the GIL) and its info.
struct Raw {
    body: Option<(Vec<u8>, ferrodds_cdr::Encoding)>,
    info: ferrodds::SampleInfo,
}

/// What the Python reader needs of a `ferrodds::DataReader<DynSample<K, S>>`.
trait AnyReader: Send + Sync {
    fn take(&self, max: usize, read: bool) -> Result<Vec<Raw>, RsError>;
    fn wait_for_data(&self, t: Duration) -> Result<bool, RsError>;
    fn wait_for_matched(&self, n: u32, t: Duration) -> bool;
    fn matched_count(&self) -> u32;
    fn set_listener(&self, l: Option<Arc<dyn DataReaderListener>>);
    fn read_condition(&self) -> ferrodds::ReadCondition;
}

impl<const K: bool, const S: bool> AnyReader for ferrodds::DataReader<DynSample<K, S>> {
    fn take(&self, max: usize, read: bool) -> Result<Vec<Raw>, RsError> {
        let samples = if read {
            self.read()?
        } else {
            self.take_max(max)?
        };
        Ok(samples
            .iter()
            .take(max)
            .map(|s| Raw {
                body: s.data.as_ref().map(|d| {
                    (
                        d.body.clone(),
                        d.enc.unwrap_or(ferrodds_cdr::Encoding::XCDR1_LE),
                    )
                }),
                info: s.info,
            })
            .collect())
    }

    fn wait_for_data(&self, t: Duration) -> Result<bool, RsError> {
        ferrodds::DataReader::wait_for_data(self, t)
    }

    fn wait_for_matched(&self, n: u32, t: Duration) -> bool {
        ferrodds::DataReader::wait_for_matched(self, n, t)
    }

    fn matched_count(&self) -> u32 {
        ferrodds::DataReader::matched_count(self)
    }

    fn set_listener(&self, l: Option<Arc<dyn DataReaderListener>>) {
        ferrodds::DataReader::set_listener(self, l)
    }

    fn read_condition(&self) -> ferrodds::ReadCondition {
        self.create_readcondition()
    }
}

/// Metadata of a received sample (its attributes are made when first read).
#[pyclass(module = "ferrodds._ferrodds", frozen)]
struct SampleInfo(ferrodds::SampleInfo);

#[pymethods]
impl SampleInfo {
    /// `True` when the sample carries data (`False` for dispose/unregister notices).
    #[getter]
    fn valid_data(&self) -> bool {
        self.0.valid_data
    }

    /// `"alive"`, `"not_alive_disposed"` or `"not_alive_no_writers"`.
    #[getter]
    fn instance_state(&self) -> &'static str {
        match self.0.instance_state {
            InstanceState::Alive => "alive",
            InstanceState::NotAliveDisposed => "not_alive_disposed",
            InstanceState::NotAliveNoWriters => "not_alive_no_writers",
        }
    }

    /// `"read"` or `"not_read"`.
    #[getter]
    fn sample_state(&self) -> &'static str {
        match self.0.sample_state {
            SampleState::Read => "read",
            SampleState::NotRead => "not_read",
        }
    }

    /// Writer's source timestamp in seconds since the Unix epoch, if sent.
    #[getter]
    fn source_timestamp(&self) -> Option<f64> {
        self.0
            .source_timestamp
            .map(|t| ferrodds::time_to_unix_nanos(t) as f64 / 1e9)
    }

    /// The instance (16-byte key hash; zeros for unkeyed topics).
    #[getter]
    fn instance_handle<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.0.instance_handle.0)
    }

    /// GUID of the writer (16 bytes).
    #[getter]
    fn publication_handle<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &guid_bytes(&self.0.publication_handle))
    }

    /// The writer's sequence number of the sample.
    #[getter]
    fn sequence_number(&self) -> i64 {
        self.0.sequence_number
    }

    fn __repr__(&self) -> String {
        format!(
            "SampleInfo(valid_data={}, instance_state={:?}, sequence_number={})",
            self.0.valid_data,
            self.instance_state(),
            self.0.sequence_number
        )
    }
}

/// A sample: `data` (an instance of the topic type, or `None`) and `info`.
#[pyclass(module = "ferrodds._ferrodds", frozen, get_all)]
struct Sample {
    /// The data when `info.valid_data`, else `None`.
    data: Py<PyAny>,
    /// Metadata.
    info: Py<SampleInfo>,
}

#[pymethods]
impl Sample {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Sample(data={}, info={})",
            self.data.bind(py).repr()?,
            self.info.bind(py).repr()?
        ))
    }
}

/// What a listener's dispatcher thread has to deliver.
#[derive(Default)]
struct Events {
    data: bool,
    /// Matched counts after each change of the matched set.
    matched: Vec<u32>,
    closed: bool,
}

/// Shared between the runtime (which flags events, never touching Python) and the
/// dispatcher thread (which calls Python with the GIL).
#[derive(Default)]
struct Dispatch {
    events: Mutex<Events>,
    cv: Condvar,
}

/// The runtime-side listener: records the event and wakes the dispatcher.
struct Flagger(Arc<Dispatch>);

impl DataReaderListener for Flagger {
    fn on_data_available(&self) {
        lock(&self.0.events).data = true;
        self.0.cv.notify_one();
    }
    fn on_subscription_matched(&self, status: &SubscriptionMatchedStatus) {
        lock(&self.0.events).matched.push(status.current_count);
        self.0.cv.notify_one();
    }
}

impl DataWriterListener for Flagger {
    fn on_publication_matched(&self, status: &PublicationMatchedStatus) {
        lock(&self.0.events).matched.push(status.current_count);
        self.0.cv.notify_one();
    }
}

/// Starts the dispatcher thread of `entity`'s listener: it waits for flagged events and
/// calls `listener` with the GIL held only for the calls. It holds `entity` weakly and ends
/// when the entity is gone or the dispatch is closed.
fn spawn_dispatcher(
    entity: &Bound<'_, PyAny>,
    listener: &Bound<'_, PyAny>,
    matched_method: &'static str,
    plain: bool,
    errors: Arc<std::sync::atomic::AtomicU64>,
    d: Arc<Dispatch>,
) -> PyResult<JoinHandle<()>> {
    let target = listener.clone().unbind();
    // A weak reference: the dispatcher must not keep an unclosed entity alive.
    let entity = PyWeakrefReference::new(entity)?.unbind();
    std::thread::Builder::new()
        .name("ferrodds-py-listener".into())
        .spawn(move || loop {
            let ev = {
                let mut g = lock(&d.events);
                while !g.closed && !g.data && g.matched.is_empty() {
                    g = d.cv.wait(g).unwrap_or_else(PoisonError::into_inner);
                }
                if g.closed {
                    break;
                }
                std::mem::take(&mut *g)
            };
            let alive = Python::attach(|py| {
                let Some(e) = entity.bind(py).upgrade() else {
                    return false;
                };
                let l = target.bind(py);
                for count in &ev.matched {
                    call_listener(py, l, matched_method, (e.clone(), *count), &errors);
                }
                if ev.data {
                    if plain {
                        if let Err(err) = l.call1((e,)) {
                            errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            err.write_unraisable(py, Some(l));
                        }
                    } else {
                        call_listener(py, l, "on_data_available", (e,), &errors);
                    }
                }
                true
            });
            if !alive {
                break;
            }
        })
        .map_err(|e| TransportError::new_err(format!("listener thread: {e}")))
}

struct ListenerThread {
    dispatch: Arc<Dispatch>,
    thread: Option<JoinHandle<()>>,
}

impl ListenerThread {
    fn stop(mut self, py: Python<'_>) {
        lock(&self.dispatch.events).closed = true;
        self.dispatch.cv.notify_one();
        if let Some(t) = self.thread.take() {
            if std::thread::current().id() != t.thread().id() {
                py.detach(|| {
                    let _ = t.join();
                });
            }
        }
    }
}

/// A DataReader of one topic.
#[pyclass(module = "ferrodds._ferrodds", frozen, weakref)]
struct DataReader {
    inner: RwLock<Option<Arc<dyn AnyReader>>>,
    topic: Py<Topic>,
    listener: Mutex<Option<ListenerThread>>,
    listener_errors: Arc<std::sync::atomic::AtomicU64>,
    undecodable: std::sync::atomic::AtomicU64,
}

impl DataReader {
    fn get(&self) -> PyResult<Arc<dyn AnyReader>> {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| deleted("DataReader"))
    }

    fn collect(&self, py: Python<'_>, max: usize, read: bool) -> PyResult<Vec<Sample>> {
        let r = self.get()?;
        let raws = r.take(max, read).map_err(to_py)?;
        let topic = self.topic.get();
        let cls = topic.data_type.bind(py);
        let mut out = Vec::with_capacity(raws.len());
        for raw in raws {
            let data = match &raw.body {
                Some((body, enc)) => {
                    match codec::decode(py, &topic.desc, cls.as_any(), body, *enc) {
                        Ok(d) => d.unbind(),
                        Err(_) => {
                            // Malformed, or another type under the same name: dropped and
                            // counted, as the Rust reader does.
                            self.undecodable
                                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            continue;
                        }
                    }
                }
                None => py.None(),
            };
            let info = SampleInfo(raw.info);
            out.push(Sample {
                data,
                info: Py::new(py, info)?,
            });
        }
        Ok(out)
    }

    fn stop_listener(&self, py: Python<'_>) -> PyResult<()> {
        let old = lock(&self.listener).take();
        if let Some(r) = self
            .inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            r.set_listener(None);
        }
        if let Some(t) = old {
            t.stop(py);
        }
        Ok(())
    }
}

fn guid_bytes(g: &ferrodds::Guid) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..12].copy_from_slice(&g.prefix.0);
    b[12..].copy_from_slice(&g.entity_id.0);
    b
}

/// Calls `listener.<method>(args)` if it has the method; a raised exception is reported
/// through `sys.unraisablehook` and counted.
fn call_listener<'py>(
    py: Python<'py>,
    listener: &Bound<'py, PyAny>,
    method: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
    errors: &std::sync::atomic::AtomicU64,
) {
    let f = match listener.getattr(method) {
        Ok(f) => f,
        Err(_) => return,
    };
    if let Err(e) = f.call1(args) {
        errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        e.write_unraisable(py, Some(&f));
    }
}

#[pymethods]
impl DataReader {
    #[new]
    #[pyo3(signature = (participant, topic, qos=None, listener=None))]
    fn new(
        py: Python<'_>,
        participant: Bound<'_, DomainParticipant>,
        topic: Bound<'_, Topic>,
        qos: Option<Bound<'_, PyAny>>,
        listener: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<Self>> {
        check_same_participant(&participant, &topic)?;
        let q = read_qos(qos.as_ref())?;
        let p = participant.get().get()?;
        let subscriber = p
            .create_subscriber(SubscriberQos::with_partition(q.partition.clone()))
            .map_err(to_py)?;
        let rq = apply_qos!(DataReaderQos::default(), q);
        let t = topic.get().topic.clone();
        let r: Arc<dyn AnyReader> = py
            .detach(|| -> Result<Arc<dyn AnyReader>, RsError> {
                Ok(match &t {
                    RsTopic::Unkeyed(t) => Arc::new(subscriber.create_datareader(t, rq)?),
                    RsTopic::SmallKey(t) => Arc::new(subscriber.create_datareader(t, rq)?),
                    RsTopic::LargeKey(t) => Arc::new(subscriber.create_datareader(t, rq)?),
                })
            })
            .map_err(to_py)?;
        let me = Py::new(
            py,
            Self {
                inner: RwLock::new(Some(r)),
                topic: topic.unbind(),
                listener: Mutex::new(None),
                listener_errors: Arc::default(),
                undecodable: Default::default(),
            },
        )?;
        if let Some(l) = listener {
            Self::set_listener(me.bind(py), Some(l))?;
        }
        Ok(me)
    }

    /// The topic.
    #[getter]
    fn topic(&self, py: Python<'_>) -> Py<Topic> {
        self.topic.clone_ref(py)
    }

    /// Removes and returns up to `max_samples` samples (all when `None`).
    #[pyo3(signature = (max_samples=None))]
    fn take(&self, py: Python<'_>, max_samples: Option<usize>) -> PyResult<Vec<Sample>> {
        self.collect(py, max_samples.unwrap_or(usize::MAX), false)
    }

    /// Returns up to `max_samples` samples (all when `None`) and leaves them in the
    /// reader; every sample the reader holds is marked read (as the Rust `read`).
    #[pyo3(signature = (max_samples=None))]
    fn read(&self, py: Python<'_>, max_samples: Option<usize>) -> PyResult<Vec<Sample>> {
        self.collect(py, max_samples.unwrap_or(usize::MAX), true)
    }

    /// Blocks until samples can be taken (`True`) or `timeout` seconds passed (`False`).
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let r = self.get()?;
        let t = self::timeout(timeout)?;
        py.detach(|| r.wait_for_data(t)).map_err(to_py)
    }

    /// Blocks until at least `n` writers matched or `timeout` seconds passed.
    #[pyo3(signature = (n=1, timeout=None))]
    fn wait_for_matched(&self, py: Python<'_>, n: u32, timeout: Option<f64>) -> PyResult<bool> {
        let r = self.get()?;
        let t = self::timeout(timeout)?;
        Ok(py.detach(|| r.wait_for_matched(n, t)))
    }

    /// Number of matched writers.
    #[getter]
    fn matched_count(&self) -> PyResult<u32> {
        Ok(self.get()?.matched_count())
    }

    /// Exceptions raised by listener callbacks so far.
    #[getter]
    fn listener_errors(&self) -> u64 {
        self.listener_errors
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Received samples dropped because they did not decode as the topic type (malformed,
    /// or a remote type of the same name with other members).
    #[getter]
    fn undecodable_count(&self) -> u64 {
        self.undecodable.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets (or with `None` removes) the listener: an object with any of
    /// `on_data_available(reader)` and `on_subscription_matched(reader, current_count)`,
    /// or a plain callable taken as `on_data_available`. Callbacks run on a dispatcher
    /// thread of this reader, holding the GIL only for the call.
    #[pyo3(signature = (listener))]
    fn set_listener(slf: &Bound<'_, Self>, listener: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        me.stop_listener(py)?;
        let Some(listener) = listener else {
            return Ok(());
        };
        let has = |m: &str| listener.hasattr(m).unwrap_or(false);
        if !has("on_data_available") && !has("on_subscription_matched") && !listener.is_callable() {
            return Err(PyTypeError::new_err(
                "listener must be callable or have on_data_available / on_subscription_matched",
            ));
        }
        let r = me.get()?;
        let dispatch = Arc::new(Dispatch::default());
        let plain = !has("on_data_available") && !has("on_subscription_matched");
        let thread = spawn_dispatcher(
            slf.as_any(),
            &listener,
            "on_subscription_matched",
            plain,
            Arc::clone(&me.listener_errors),
            Arc::clone(&dispatch),
        )?;
        *lock(&me.listener) = Some(ListenerThread {
            dispatch: Arc::clone(&dispatch),
            thread: Some(thread),
        });
        r.set_listener(Some(Arc::new(Flagger(dispatch))));
        Ok(())
    }

    /// Deletes the reader (and stops its listener). Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.stop_listener(py)?;
        let r = self
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(r) = r {
            py.detach(move || drop(r));
        }
        Ok(())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

impl Drop for DataWriter {
    fn drop(&mut self) {
        if let Some(t) = lock(&self.listener).take() {
            lock(&t.dispatch.events).closed = true;
            t.dispatch.cv.notify_one();
        }
    }
}

impl Drop for DataReader {
    fn drop(&mut self) {
        // Stops a dispatcher left running by a reader that was never closed (it holds only
        // a weak reference to the reader, so this runs); joining could wait for the GIL.
        if let Some(t) = lock(&self.listener).take() {
            lock(&t.dispatch.events).closed = true;
            t.dispatch.cv.notify_one();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Wait sets

/// A condition the application triggers (for example to wake a thread waiting on a
/// `WaitSet`).
#[pyclass(module = "ferrodds._ferrodds", frozen)]
struct GuardCondition(ferrodds::GuardCondition);

#[pymethods]
impl GuardCondition {
    #[new]
    fn new() -> Self {
        Self(ferrodds::GuardCondition::new())
    }

    /// Sets the trigger value (`True` wakes the wait sets it is attached to).
    fn set_trigger_value(&self, value: bool) {
        self.0.set_trigger_value(value)
    }

    /// The trigger value.
    #[getter]
    fn trigger_value(&self) -> bool {
        self.0.trigger_value()
    }
}

/// The attached conditions with the Python objects they stand for.
struct Attached {
    ws: ferrodds::WaitSet,
    items: Vec<(ferrodds::Condition, Arc<Py<PyAny>>)>,
}

/// Blocks until one of its attached readers (unread data) or guard conditions triggers.
#[pyclass(module = "ferrodds._ferrodds", frozen)]
struct WaitSet(Mutex<Attached>);

impl WaitSet {
    fn condition_of(obj: &Bound<'_, PyAny>) -> PyResult<ferrodds::Condition> {
        if let Ok(r) = obj.cast::<DataReader>() {
            return Ok(r.get().get()?.read_condition().into());
        }
        if let Ok(g) = obj.cast::<GuardCondition>() {
            return Ok(g.get().0.clone().into());
        }
        Err(PyTypeError::new_err(format!(
            "a WaitSet waits on DataReader or GuardCondition objects, got {}",
            obj.get_type().name()?
        )))
    }
}

#[pymethods]
impl WaitSet {
    #[new]
    fn new() -> Self {
        Self(Mutex::new(Attached {
            ws: ferrodds::WaitSet::new(),
            items: Vec::new(),
        }))
    }

    /// Attaches a `DataReader` (triggers while it has unread samples) or a
    /// `GuardCondition`. Attaching an object twice is a no-op. Waits (without the GIL)
    /// while another thread is in `wait`.
    fn attach(&self, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = Self::condition_of(obj)?;
        let key = obj.as_ptr() as usize;
        let o = Arc::new(obj.clone().unbind());
        obj.py().detach(|| {
            let mut a = lock(&self.0);
            if a.items.iter().any(|(_, x)| x.as_ptr() as usize == key) {
                return;
            }
            a.ws.attach_condition(c.clone());
            a.items.push((c, o));
        });
        Ok(())
    }

    /// Detaches an attached object (`BadParameterError` if it is not attached).
    fn detach(&self, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = obj.as_ptr() as usize;
        let removed = obj.py().detach(|| {
            let mut a = lock(&self.0);
            let pos = a
                .items
                .iter()
                .position(|(_, x)| x.as_ptr() as usize == key)?;
            let (c, o) = a.items.remove(pos);
            Some((a.ws.detach_condition(c), o))
        });
        match removed {
            None => Err(BadParameterError::new_err("the object is not attached")),
            Some((r, _obj)) => r.map_err(to_py),
        }
    }

    /// Waits until an attached object triggers and returns the triggered ones; raises
    /// `DdsTimeoutError` after `timeout` seconds (`None` = forever). The GIL is released
    /// while waiting; attaching from another thread waits until this returns.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Vec<Py<PyAny>>> {
        let deadline = std::time::Instant::now() + self::timeout(timeout)?;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let triggered: Vec<Arc<Py<PyAny>>> = py
                .detach(|| {
                    let a = lock(&self.0);
                    a.ws.wait(left).map(|_| {
                        a.items
                            .iter()
                            .filter(|(c, _)| c.trigger_value())
                            .map(|(_, o)| Arc::clone(o))
                            .collect()
                    })
                })
                .map_err(to_py)?;
            if !triggered.is_empty() {
                return Ok(triggered.iter().map(|o| o.clone_ref(py)).collect());
            }
        }
    }
}

/// The native module.
#[pymodule]
fn _ferrodds(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<DomainParticipant>()?;
    m.add_class::<Topic>()?;
    m.add_class::<DataWriter>()?;
    m.add_class::<DataReader>()?;
    m.add_class::<Sample>()?;
    m.add_class::<SampleInfo>()?;
    m.add_class::<GuardCondition>()?;
    m.add_class::<WaitSet>()?;
    m.add("DdsError", py.get_type::<DdsError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("BadParameterError", py.get_type::<BadParameterError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("OutOfResourcesError", py.get_type::<OutOfResourcesError>())?;
    m.add(
        "PreconditionNotMetError",
        py.get_type::<PreconditionNotMetError>(),
    )?;
    m.add("DdsTimeoutError", py.get_type::<DdsTimeoutError>())?;
    m.add("AlreadyDeletedError", py.get_type::<AlreadyDeletedError>())?;
    m.add("NotEnabledError", py.get_type::<NotEnabledError>())?;
    m.add(
        "IllegalOperationError",
        py.get_type::<IllegalOperationError>(),
    )?;
    m.add("SerializationError", py.get_type::<SerializationError>())?;
    m.add("TransportError", py.get_type::<TransportError>())?;
    Ok(())
}
