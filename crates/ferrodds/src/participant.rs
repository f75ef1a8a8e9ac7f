//! [`DomainParticipant`], [`Topic`], [`Publisher`] and [`Subscriber`].

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use ferrodds_cdr::TopicType;
use ferrodds_rtps::{
    GuidPrefix, Locator, Participant, ParticipantConfig, ReaderAttributes, Timestamp,
    WriterAttributes,
};
use ferrodds_transport::{
    InterfaceSelector, PortMapping, TcpConfig, TcpTransport, Transport, UdpConfig, UdpTransport,
};

#[cfg(feature = "shared-memory")]
use ferrodds_transport_shm::{ShmConfig, ShmTransport};

use crate::capture::{CaptureConfig, CaptureStats, CaptureTap};
use crate::config::{Config, Interface};
use crate::entity::{ReaderShared, WriterShared};
use crate::error::{DdsError, DdsResult};
use crate::qos::{DataReaderQos, DataWriterQos, PublisherQos, SubscriberQos, TopicQos};
use crate::reader::DataReader;
use crate::runtime::Inner;
use crate::sync::lock;
use crate::typesupport;
use crate::writer::DataWriter;

/// The RTPS vendor id FerroDDS announces and puts first in its GUID prefixes
/// (`ferrodds_wire::VendorId::FERRODDS`, a value the OMG has not assigned to anyone).
pub const VENDOR_ID: [u8; 2] = ferrodds_wire::VendorId::FERRODDS.0;

static PREFIX_COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh GUID prefix: vendor id (2 bytes), host id (2), process id (4), then a
/// per-process counter mixed with random bits (4).
pub(crate) fn new_guid_prefix() -> GuidPrefix {
    let mut host = RandomState::new().build_hasher();
    // A stable-per-host value when available; randomness otherwise.
    if let Ok(name) = std::fs::read_to_string("/etc/hostname") {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(name.trim(), &mut h);
        host = h;
    }
    let host_id = (host.finish() & 0xffff) as u16;
    let pid = std::process::id();
    let counter = PREFIX_COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().build_hasher().finish() as u32;
    let tail = (counter & 0xff) | (random & 0xffff_ff00);
    let mut p = [0u8; 12];
    p[0..2].copy_from_slice(&VENDOR_ID);
    p[2..4].copy_from_slice(&host_id.to_be_bytes());
    p[4..8].copy_from_slice(&pid.to_be_bytes());
    p[8..12].copy_from_slice(&tail.to_be_bytes());
    GuidPrefix(p)
}

/// This run's incarnation stamp ([`ParticipantConfig::incarnation`]): the wall clock in
/// nanoseconds since the UNIX epoch (0 for a clock before it), so that a participant restarted
/// with the same [`Config::guid_prefix`] announces a later one than its previous run (unless
/// the clock went back in between: peers then wait for the previous run's lease to end).
fn incarnation() -> u64 {
    SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// IPv4 + UDP header bytes: a datagram of MTU − this fits one IP packet.
const IP_UDP_HEADERS: usize = 28;

/// The largest datagram the engine sends: [`Config::max_message_size`], limited to one IP
/// packet of the interface's MTU when the interface is not loopback and
/// [`Config::ip_fragmentation`] is off (larger samples then go as RTPS DATA_FRAGs).
fn send_message_size(config: &Config, iface: &ferrodds_transport::NetworkInterface) -> usize {
    match iface.mtu {
        Some(mtu) if !iface.loopback && !config.ip_fragmentation => {
            let fits = (mtu as usize).saturating_sub(IP_UDP_HEADERS);
            // (An MTU below the IPv4 minimum of 576 is not believed.)
            config.max_message_size.min(fits.max(576 - IP_UDP_HEADERS))
        }
        _ => config.max_message_size,
    }
}

/// Entry point: a participant in one DDS domain, owning the UDP transport and the runtime
/// threads. Dropping it deletes every entity it created (their handles then return
/// [`DdsError::AlreadyDeleted`]), joins the threads and closes the sockets.
pub struct DomainParticipant {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
}

impl DomainParticipant {
    /// A participant with [`Config::from_env`] (defaults plus `FERRODDS_*` overrides).
    pub fn new(domain_id: u32) -> DdsResult<Self> {
        Self::with_config(domain_id, Config::from_env()?)
    }

    /// A participant with an explicit configuration (the environment is not consulted).
    pub fn with_config(domain_id: u32, config: Config) -> DdsResult<Self> {
        config.validate()?;
        let origin = Instant::now();
        let unix_at_origin = SystemTime::now();
        let selector = match &config.interface {
            Interface::Default => InterfaceSelector::Default,
            Interface::Name(n) => InterfaceSelector::Name(n.clone()),
            Interface::Address(a) => InterfaceSelector::Address(*a),
        };
        let guid_prefix = config.guid_prefix.unwrap_or_else(new_guid_prefix);
        // With security the GUID prefix is the identity's adjusted one.
        let security = match &config.security {
            Some(s) => Some(security_plugin(s, guid_prefix, domain_id, unix_at_origin)?),
            None => None,
        };
        let guid_prefix = security.as_ref().map_or(guid_prefix, |p| p.guid_prefix());
        let udp = if config.transports.udp() {
            let mut udp = UdpConfig::new(domain_id);
            udp.participant_id = config.participant_id;
            udp.interface = selector.clone();
            udp.multicast_enabled = config.multicast;
            udp.user_multicast_groups
                .clone_from(&config.multicast_groups);
            udp.recv_buffer_bytes = Some(config.recv_buffer_bytes);
            udp.send_buffer_bytes = Some(config.send_buffer_bytes);
            udp.max_message_size = config.max_message_size;
            if let Some(wan) = config.udp_wan {
                udp.wan = Some(wan);
                udp.multicast_enabled = false;
            }
            Some(UdpTransport::new(&udp)?)
        } else {
            None
        };
        let tcp = if config.transports.tcp() {
            let mut header = [0u8; 20];
            let _ = ferrodds_wire::Header::new(guid_prefix).write(&mut header);
            let security = if config.transports.tls() {
                tls_security(&config)?
            } else {
                None
            };
            let tcp = TcpConfig {
                interface: selector,
                port: config.tcp_port,
                max_message_size: config.max_message_size,
                rtps_header: Some(header),
                security,
                ..TcpConfig::default()
            };
            Some(TcpTransport::new(&tcp)?)
        } else {
            None
        };
        // Shared memory beside UDPv4: its segment is named by the UDP user-data port, which
        // is ours alone on this host while the socket lives.
        #[cfg(feature = "shared-memory")]
        let (mut pool, mut chunk_dir) = (None, None);
        let shm: Option<Arc<dyn Transport>> = match (&udp, config.shared_memory) {
            #[cfg(not(feature = "shared-memory"))]
            (_, true) => {
                return Err(DdsError::Unsupported {
                    what: "shared memory: FerroDDS was built without the `shared-memory` feature",
                })
            }
            #[cfg(feature = "shared-memory")]
            (Some(u), true) => {
                let id = Transport::locators(u)
                    .default_unicast
                    .first()
                    .map(|a| a.port())
                    .ok_or(DdsError::BadParameter {
                        what: "shared memory needs a UDP user-data port",
                    })?;
                let shm_config = ShmConfig::new(id);
                // Segments of processes that died without removing theirs.
                match ferrodds_transport_shm::cleanup_stale(
                    &shm_config.dir,
                    ferrodds_transport_shm::real_uid(),
                ) {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(removed = n, "stale shared-memory segments removed"),
                    Err(e) => {
                        tracing::debug!(error = %e, "stale shared-memory segments not checked")
                    }
                }
                let transport = ShmTransport::new(shm_config.clone())?;
                // The loan pool beside the segment, named from the same id. Without it
                // (tmpfs full, say) large samples go through the ring as bytes.
                let pool_config = ferrodds_transport_shm::PoolConfig {
                    dir: shm_config.dir.clone(),
                    mode: shm_config.mode,
                    ..ferrodds_transport_shm::PoolConfig::new(id)
                };
                pool = match ferrodds_transport_shm::LoanPool::create(&pool_config) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        tracing::warn!(error = %e, "no shared-memory loan pool: large samples go through the ring");
                        None
                    }
                };
                chunk_dir = Some(shm_config.dir);
                Some(Arc::new(transport))
            }
            _ => None,
        };
        #[cfg(feature = "shared-memory")]
        let shm_host = shm.as_ref().map(|_| ferrodds_transport_shm::host_id());
        #[cfg(not(feature = "shared-memory"))]
        let shm_host: Option<[u8; 12]> = None;
        let participant_id = match &udp {
            Some(u) => u.participant_id(),
            None => config.participant_id.unwrap_or(0),
        };
        let interface = match (&udp, &tcp) {
            (Some(u), _) => u.interface().clone(),
            (None, Some(t)) => Transport::interface(t).clone(),
            (None, None) => unreachable!("Transports selects at least one transport"),
        };
        // A stream has no MTU: with TCP alone messages go up to `max_message_size`.
        let send_message_size = match &udp {
            Some(_) => send_message_size(&config, &interface),
            None => config.max_message_size,
        };
        let udp_locators = udp.as_ref().map(Transport::locators).unwrap_or_default();
        let tcp_locators = tcp.as_ref().map(Transport::locators).unwrap_or_default();
        let loc = |kind: i32, v: &[std::net::SocketAddrV4]| -> Vec<Locator> {
            v.iter()
                .map(|a| Locator::with_ipv4(kind, *a.ip(), u32::from(a.port())))
                .collect()
        };
        let udp_kind = Locator::KIND_UDPV4;
        let tcp_kind = if config.transports.tls() {
            Locator::KIND_FERRODDS_TLSV4
        } else {
            Locator::KIND_TCPV4
        };

        let mut spdp_destinations: Vec<Locator> = Vec::new();
        if config.multicast {
            spdp_destinations.extend(loc(udp_kind, &udp_locators.metatraffic_multicast));
        }
        if udp.is_some() && config.udp_wan.is_some() {
            // WAN peers are reached at their one port.
            spdp_destinations.extend(loc(udp_kind, &config.wan_peers));
        } else if udp.is_some() {
            let ports = PortMapping::RTPS_DEFAULT;
            for peer in &config.initial_peers {
                for pid in 0..=config.max_peer_participant_id {
                    match ports.spdp_unicast_port(domain_id, pid) {
                        Ok(port) => spdp_destinations.push(Locator::udpv4(*peer, port)),
                        Err(_) => break,
                    }
                }
            }
        }
        if tcp.is_some() {
            spdp_destinations.extend(loc(tcp_kind, &config.tcp_peers));
        }
        spdp_destinations.dedup();

        let mut metatraffic_unicast_locators = loc(udp_kind, &udp_locators.metatraffic_unicast);
        metatraffic_unicast_locators.extend(loc(tcp_kind, &tcp_locators.metatraffic_unicast));
        let mut default_unicast_locators: Vec<Locator> = shm
            .as_ref()
            .zip(shm_host)
            .iter()
            .flat_map(|(t, host)| {
                t.locators()
                    .default_unicast
                    .into_iter()
                    .map(|a| Locator::shm(*host, a.port()))
            })
            .collect();
        default_unicast_locators.extend(loc(udp_kind, &udp_locators.default_unicast));
        default_unicast_locators.extend(loc(tcp_kind, &tcp_locators.default_unicast));
        let engine_cfg = ParticipantConfig {
            domain_id,
            participant_id,
            guid_prefix,
            metatraffic_unicast_locators,
            metatraffic_multicast_locators: if config.multicast {
                loc(udp_kind, &udp_locators.metatraffic_multicast)
            } else {
                Vec::new()
            },
            default_unicast_locators,
            default_multicast_locators: if config.multicast {
                loc(udp_kind, &udp_locators.default_multicast)
            } else {
                Vec::new()
            },
            spdp_destinations,
            lease_duration: config.lease_duration,
            spdp_period: config.spdp_period,
            heartbeat_period: config.heartbeat_period,
            max_message_size: send_message_size,
            fragment_size: config.fragment_size,
            reassembly: ferrodds_rtps::ReassemblyLimits {
                max_sample_size: config.max_sample_size,
                max_bytes_per_writer: config.max_reassembly_bytes.0,
                max_bytes_total: config.max_reassembly_bytes.1,
                max_samples_per_writer: config.max_reassembly_samples.max(1),
                ..ferrodds_rtps::ReassemblyLimits::default()
            },
            peer_limits: config.peer_limits,
            entity_name: config.entity_name.clone(),
            congestion_control: config.congestion_control,
            incarnation: Some(incarnation()),
            shm_host,
            // Shared memory has no MTU: a push to peers on this host only may fill a message
            // of `max_message_size` even where the UDP interface's MTU bounds the rest.
            // (FerroDDS's slots take 65,536 bytes; a peer's are the same size.)
            shm_message_size: match (&shm, shm_host) {
                (Some(t), Some(_)) => config.max_message_size.min(t.max_message_size()),
                _ => 0,
            },
            multicast_user_data: config.multicast_user_data,
            ..ParticipantConfig::default()
        };
        let engine = match security {
            Some(plugin) => Participant::with_security(engine_cfg, Timestamp(0), plugin)
                .map_err(|f| DdsError::Security(f.reason))?,
            None => Participant::new(engine_cfg, Timestamp(0)),
        };
        // Other participants' pools: read by the engine (copies) and by readers that read
        // in place (views).
        #[cfg(feature = "shared-memory")]
        let chunks = chunk_dir.map(|dir| {
            Arc::new(crate::chunks::Chunks::new(
                ferrodds_transport_shm::PoolReader::new(dir, ferrodds_transport_shm::real_uid()),
                config.max_sample_size as usize,
            ))
        });
        #[cfg(feature = "shared-memory")]
        let engine = {
            let mut engine = engine;
            if let Some(c) = &chunks {
                engine.set_chunk_reader(Some(Box::new(crate::chunks::EngineChunkReader::new(
                    Arc::clone(c),
                ))));
            }
            engine
        };
        tracing::debug!(
            domain_id,
            participant_id,
            prefix = ?engine.guid_prefix(),
            send_message_size,
            transports = ?config.transports,
            "participant created"
        );
        let mut transports: Vec<Arc<dyn Transport>> = Vec::new();
        if let Some(u) = udp {
            transports.push(Arc::new(u));
        }
        if let Some(t) = tcp {
            transports.push(Arc::new(t));
        }
        if let Some(t) = shm {
            transports.push(t);
        }
        // The groups readers may announce: on the port of the participant's user-data group.
        let reader_groups: Vec<Locator> = udp_locators
            .default_multicast
            .first()
            .map(|a| {
                config
                    .multicast_groups
                    .iter()
                    .map(|g| Locator::udpv4(*g, a.port()))
                    .collect()
            })
            .unwrap_or_default();
        let timerfd = nix::sys::timerfd::TimerFd::new(
            nix::sys::timerfd::ClockId::CLOCK_MONOTONIC,
            nix::sys::timerfd::TimerFlags::TFD_CLOEXEC,
        )
        .map_err(|e| DdsError::Io(std::io::Error::from(e)))?;
        let mut inner = Inner::new(
            domain_id,
            engine,
            participant_id,
            transports,
            origin,
            config.multicast,
            config.max_message_size,
            timerfd,
        );
        inner.reader_groups = reader_groups;
        #[cfg(feature = "shared-memory")]
        {
            inner.pool = pool;
            inner.chunks = chunks;
        }
        let inner = Arc::new(inner);
        if let Some(c) = &config.capture {
            let tap = CaptureTap::start(
                c,
                &inner.guid_prefix.0,
                &interface.name,
                &inner.transport_kinds(),
            )?;
            if inner.install_capture(tap).is_err() {
                unreachable!("a new participant has no capture");
            }
        }
        let threads = match inner.start_threads() {
            Ok(t) => t,
            Err(e) => {
                inner.shutdown();
                return Err(e.into());
            }
        };
        Ok(Self { inner, threads })
    }

    /// Starts capturing the participant's traffic into a pcapng file ([`CaptureConfig`]);
    /// returns the file's path. Fails with `PreconditionNotMet` while a capture runs, and
    /// with [`DdsError::CaptureFile`] when the file cannot be created (the participant
    /// runs on either way).
    pub fn start_capture(&self, config: &CaptureConfig) -> DdsResult<std::path::PathBuf> {
        if self.inner.capture.current().is_some() {
            return Err(DdsError::PreconditionNotMet {
                what: "a capture is already running",
            });
        }
        let iface = self.inner.interface_name();
        let tap = CaptureTap::start(
            config,
            &self.inner.guid_prefix.0,
            &iface,
            &self.inner.transport_kinds(),
        )?;
        let path = tap.stats().path;
        self.inner
            .install_capture(tap)
            .map_err(|_| DdsError::PreconditionNotMet {
                what: "a capture is already running",
            })?;
        Ok(path)
    }

    /// Stops the running capture: writes out what it recorded, closes the file and returns
    /// its figures (`None` when no capture runs).
    pub fn stop_capture(&self) -> Option<CaptureStats> {
        self.inner.remove_capture()
    }

    /// Pauses the running capture: messages are not recorded (nor counted) until
    /// [`resume_capture`](Self::resume_capture). Fails with `PreconditionNotMet` when no
    /// capture runs.
    pub fn pause_capture(&self) -> DdsResult<()> {
        self.set_capture_paused(true)
    }

    /// Resumes a paused capture. Fails with `PreconditionNotMet` when no capture runs.
    pub fn resume_capture(&self) -> DdsResult<()> {
        self.set_capture_paused(false)
    }

    fn set_capture_paused(&self, paused: bool) -> DdsResult<()> {
        match self.inner.capture.current() {
            Some(t) => {
                t.pause(paused);
                Ok(())
            }
            None => Err(DdsError::PreconditionNotMet {
                what: "no capture is running",
            }),
        }
    }

    /// The running capture's figures: messages written and dropped, bytes, the file, and
    /// the error that stopped it if one did (`None` when no capture runs).
    pub fn capture_stats(&self) -> Option<CaptureStats> {
        self.inner.capture.current().map(|t| t.stats())
    }

    /// Counters of each transport the participant uses: connections, frame errors, messages
    /// dropped because a connection's send queue was full or a peer unreachable.
    pub fn transport_stats(
        &self,
    ) -> Vec<(
        ferrodds_transport::TransportKind,
        ferrodds_transport::TransportStats,
    )> {
        self.inner.transport_stats()
    }

    /// The last TLS handshake errors of its transports ("PEER: reason", oldest first): why a
    /// peer was refused, or why it refused us. Each is also logged once per peer and reason.
    pub fn transport_security_errors(&self) -> Vec<String> {
        self.inner.security_errors()
    }

    /// (DDS Security) GUID prefixes of the remote participants authenticated so far (their
    /// identity verified by the PKI-DH handshake and their permissions validated). Empty
    /// without [`crate::Config::security`].
    pub fn authenticated_participants(&self) -> Vec<GuidPrefix> {
        self.inner
            .query(|st| st.engine.authenticated_participants())
    }

    /// (DDS Security) The last authentication failures ("PREFIX: reason", oldest first, at
    /// most 16): certificates from another CA, bad handshake messages, handshakes timed
    /// out, permissions refused. Also counted in [`Self::engine_stats`]
    /// (`authentication_failures`, `access_denied_participants`).
    pub fn authentication_failures(&self) -> Vec<String> {
        self.inner.authentication_failures()
    }

    /// The protocol engine's counters: datagrams, repairs, losses readers reported, the
    /// pacing rate and the measured round trip ([`ferrodds_rtps::Stats`]). With
    /// `FERRODDS_STATS=1` in the environment they are also printed to stderr when the
    /// participant is dropped.
    pub fn engine_stats(&self) -> ferrodds_rtps::Stats {
        self.inner.query(|st| *st.engine.stats())
    }

    /// The domain id.
    pub fn domain_id(&self) -> u32 {
        self.inner.domain_id
    }

    /// The participant id (selects the unicast ports).
    pub fn participant_id(&self) -> u32 {
        self.inner.participant_id
    }

    /// This participant's GUID prefix.
    pub fn guid_prefix(&self) -> GuidPrefix {
        self.inner.guid_prefix
    }

    /// GUID prefixes of the remote participants discovered so far.
    pub fn discovered_participants(&self) -> Vec<GuidPrefix> {
        self.inner.discovered_participants()
    }

    /// Blocks until at least `n` remote participants are discovered; `false` on timeout.
    pub fn wait_for_participants(&self, n: usize, timeout: Duration) -> bool {
        self.inner.wait_for_participants(n, timeout)
    }

    /// Creates (or looks up) a topic. Fails with `PreconditionNotMet` when a topic of the
    /// same name but another type exists in this participant.
    pub fn create_topic<T: TopicType>(&self, name: &str, _qos: TopicQos) -> DdsResult<Topic<T>> {
        self.register_topic(name, T::TYPE_NAME)?;
        Ok(Topic {
            name: name.to_owned(),
            type_name: Arc::from(T::TYPE_NAME),
            key_extractor: None,
            _t: PhantomData,
        })
    }

    /// Creates (or looks up) a topic whose type name and key are decided at run time
    /// ([`DynamicTypeSupport`]): `T` carries serialized samples and `support` names the
    /// type in discovery and finds the instance of received samples. Used by language
    /// bindings. Fails with `BadParameter` for an empty type name or when
    /// `support.key_hash` is given for an unkeyed `T` (or missing for a keyed one), and
    /// with `PreconditionNotMet` as [`create_topic`](Self::create_topic) does.
    pub fn create_topic_dynamic<T: TopicType>(
        &self,
        name: &str,
        support: DynamicTypeSupport,
        _qos: TopicQos,
    ) -> DdsResult<Topic<T>> {
        if support.type_name.is_empty() {
            return Err(DdsError::BadParameter {
                what: "type name must not be empty",
            });
        }
        if support.key_hash.is_some() != T::IS_KEYED {
            return Err(DdsError::BadParameter {
                what: "a key hash function is needed exactly for keyed types",
            });
        }
        self.register_topic(name, &support.type_name)?;
        let key_extractor = support.key_hash.map(|f| {
            ferrodds_rtps::KeyExtractor(Arc::new(move |kind, payload: &[u8]| {
                f(kind == ferrodds_rtps::ChangeKind::Alive, payload)
            }))
        });
        Ok(Topic {
            name: name.to_owned(),
            type_name: Arc::from(support.type_name.as_str()),
            key_extractor,
            _t: PhantomData,
        })
    }

    /// Records topic `name` with `type_name` (or checks that it has that type).
    fn register_topic(&self, name: &str, type_name: &str) -> DdsResult<()> {
        if name.is_empty() {
            return Err(DdsError::BadParameter {
                what: "topic name must not be empty",
            });
        }
        let mut topics = lock(&self.inner.topics);
        match topics.get(name) {
            Some(t) if t != type_name => Err(DdsError::PreconditionNotMet {
                what: "a topic with this name and another type exists",
            }),
            Some(_) => Ok(()),
            None => {
                topics.insert(name.to_owned(), type_name.to_owned());
                Ok(())
            }
        }
    }

    /// Creates a publisher (its QoS carries the PARTITION of its writers).
    pub fn create_publisher(&self, qos: PublisherQos) -> DdsResult<Publisher> {
        Ok(Publisher {
            inner: Arc::clone(&self.inner),
            qos,
        })
    }

    /// Creates a subscriber (its QoS carries the PARTITION of its readers).
    pub fn create_subscriber(&self, qos: SubscriberQos) -> DdsResult<Subscriber> {
        Ok(Subscriber {
            inner: Arc::clone(&self.inner),
            qos,
        })
    }
}

impl Drop for DomainParticipant {
    fn drop(&mut self) {
        if std::env::var_os(crate::config::ENV_STATS).is_some_and(|v| v == "1") {
            eprintln!(
                "ferrodds participant {:?} engine counters: {:?}",
                self.inner.guid_prefix,
                self.engine_stats()
            );
        }
        self.inner.shutdown();
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                tracing::warn!("a runtime thread panicked");
            }
        }
        self.inner.finish_capture();
    }
}

impl std::fmt::Debug for DomainParticipant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DomainParticipant")
            .field("domain_id", &self.inner.domain_id)
            .field("participant_id", &self.inner.participant_id)
            .field("guid_prefix", &self.inner.guid_prefix)
            .finish()
    }
}

/// Type support decided at run time, for topic types whose name and key are known only
/// then (language bindings that serialize samples themselves):
/// [`DomainParticipant::create_topic_dynamic`].
#[derive(Clone)]
pub struct DynamicTypeSupport {
    /// DDS type name announced in discovery.
    pub type_name: String,
    /// For keyed types: the key hash of a received serialized payload (encapsulation
    /// header included) that came without `PID_KEY_HASH`; the flag is `true` for a whole
    /// sample and `false` for a key-only payload (dispose/unregister). `None` when the
    /// payload cannot be decoded. Must be a pure function of its input; it runs in a
    /// receive thread under the engine lock. `None` for unkeyed types.
    #[allow(clippy::type_complexity)]
    pub key_hash: Option<Arc<dyn Fn(bool, &[u8]) -> Option<[u8; 16]> + Send + Sync>>,
}

impl std::fmt::Debug for DynamicTypeSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicTypeSupport")
            .field("type_name", &self.type_name)
            .field("keyed", &self.key_hash.is_some())
            .finish()
    }
}

/// A named, typed topic.
pub struct Topic<T> {
    name: String,
    type_name: Arc<str>,
    key_extractor: Option<ferrodds_rtps::KeyExtractor>,
    _t: PhantomData<fn() -> T>,
}

impl<T: TopicType> Topic<T> {
    /// The topic name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The DDS type name announced in discovery (`T::TYPE_NAME`, or the
    /// [`DynamicTypeSupport`]'s).
    pub fn type_name(&self) -> &str {
        &self.type_name
    }
}

impl<T> Clone for Topic<T> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            type_name: Arc::clone(&self.type_name),
            key_extractor: self.key_extractor.clone(),
            _t: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Topic<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topic")
            .field("name", &self.name)
            .field("type_name", &self.type_name)
            .finish()
    }
}

/// Creates [`DataWriter`]s in its partitions.
#[derive(Clone)]
pub struct Publisher {
    inner: Arc<Inner>,
    qos: PublisherQos,
}

impl Publisher {
    /// Creates a writer on `topic`.
    pub fn create_datawriter<T: TopicType>(
        &self,
        topic: &Topic<T>,
        qos: DataWriterQos,
    ) -> DdsResult<DataWriter<T>> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        qos.validate()?;
        let attrs = WriterAttributes {
            topic_name: topic.name.clone(),
            type_name: topic.type_name.to_string(),
            keyed: T::IS_KEYED,
            qos: qos.to_engine(&self.qos.partition),
        };
        let shared = Arc::new(WriterShared::default());
        let mut pending = Vec::new();
        let (id, guid) = self.inner.with_engine(&mut pending, |st, now| {
            let partitions: Vec<&str> = attrs.qos.partition.0.iter().map(String::as_str).collect();
            st.engine
                .check_local_endpoint(&attrs.topic_name, &partitions, true, now)
                .map_err(|f| DdsError::Security(f.reason))?;
            let id = st.engine.create_writer(attrs, now)?;
            st.writers.insert(id, Arc::clone(&shared));
            let guid = st.engine.writer_guid(id);
            Ok::<_, DdsError>((id, guid))
        })?;
        let guid = guid.ok_or(DdsError::Error {
            what: "engine has no GUID for a new writer",
        })?;
        Ok(DataWriter::new(
            Arc::clone(&self.inner),
            id,
            guid,
            shared,
            qos,
            topic.name.clone(),
        ))
    }

    /// The publisher QoS.
    pub fn qos(&self) -> &PublisherQos {
        &self.qos
    }
}

/// Creates [`DataReader`]s in its partitions.
#[derive(Clone)]
pub struct Subscriber {
    inner: Arc<Inner>,
    qos: SubscriberQos,
}

impl Subscriber {
    /// Creates a reader on `topic`.
    pub fn create_datareader<T: TopicType + Send + 'static>(
        &self,
        topic: &Topic<T>,
        qos: DataReaderQos,
    ) -> DdsResult<DataReader<T>> {
        if self.inner.is_shut_down() {
            return Err(DdsError::AlreadyDeleted);
        }
        qos.validate()?;
        let mut attrs = ReaderAttributes {
            topic_name: topic.name.clone(),
            type_name: topic.type_name.to_string(),
            keyed: T::IS_KEYED,
            qos: qos.to_engine(&self.qos.partition),
        };
        if let Some(g) = qos.multicast_group {
            let group = self
                .inner
                .reader_groups
                .iter()
                .find(|l| l.ipv4_destination().is_some_and(|a| *a.ip() == g))
                .ok_or(DdsError::BadParameter {
                    what: "the reader's multicast_group is not one of the participant's Config::multicast_groups",
                })?;
            attrs.qos.multicast_locators = vec![*group];
        }
        let shared = Arc::new(ReaderShared::default());
        let mut pending = Vec::new();
        let (id, guid) = self.inner.with_engine(&mut pending, |st, now| {
            let partitions: Vec<&str> = attrs.qos.partition.0.iter().map(String::as_str).collect();
            st.engine
                .check_local_endpoint(&attrs.topic_name, &partitions, false, now)
                .map_err(|f| DdsError::Security(f.reason))?;
            let id = st.engine.create_reader(attrs, now)?;
            if let Some(k) = topic
                .key_extractor
                .clone()
                .or_else(typesupport::key_extractor::<T>)
            {
                st.engine
                    .set_key_extractor(id, k)
                    .map_err(|_| DdsError::Error {
                        what: "engine lost a new reader",
                    })?;
            }
            st.readers.insert(id, Arc::clone(&shared));
            let guid = st.engine.reader_guid(id);
            Ok::<_, DdsError>((id, guid))
        })?;
        let guid = guid.ok_or(DdsError::Error {
            what: "engine has no GUID for a new reader",
        })?;
        Ok(DataReader::new(
            Arc::clone(&self.inner),
            id,
            guid,
            shared,
            qos,
            topic.name.clone(),
        ))
    }

    /// The subscriber QoS.
    pub fn qos(&self) -> &SubscriberQos {
        &self.qos
    }
}

/// The DDS Security plugins of a new participant (candidate GUID prefix `prefix`), engine
/// time 0 being `unix_at_origin`.
#[cfg(feature = "security")]
fn security_plugin(
    config: &crate::SecurityConfig,
    prefix: GuidPrefix,
    domain_id: u32,
    unix_at_origin: SystemTime,
) -> DdsResult<Box<dyn ferrodds_rtps::security::ParticipantSecurity>> {
    use ferrodds_security::engine::{BuiltinSecurity, SecurityFiles, WallClock};
    let err = |e: ferrodds_security::engine::EngineSecurityError| DdsError::Security(e.to_string());
    let files = SecurityFiles::from_properties(config.properties()).map_err(err)?;
    let unix_ns_at_zero = unix_at_origin
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let plugin = BuiltinSecurity::load(
        &files,
        prefix,
        domain_id,
        WallClock { unix_ns_at_zero },
        Timestamp(0),
        Box::new(ferrodds_security::auth::OsEntropy),
    )
    .map_err(err)?;
    Ok(Box::new(plugin))
}

/// The TLS settings of the TCP transport for `Transports::Tlsv4`.
#[cfg(feature = "tls")]
fn tls_security(config: &Config) -> DdsResult<Option<ferrodds_transport::SecurityHandle>> {
    let tls = config.tls.as_ref().ok_or(DdsError::BadParameter {
        what: "Transports::Tlsv4 needs Config::tls (CA, certificate and private key)",
    })?;
    Ok(Some(ferrodds_transport_tls::security(tls)?))
}

/// Without the `tls` feature `Transports::Tlsv4` cannot be used.
#[cfg(not(feature = "tls"))]
fn tls_security(_config: &Config) -> DdsResult<Option<ferrodds_transport::SecurityHandle>> {
    Err(DdsError::Unsupported {
        what: "TLS: FerroDDS was built without the `tls` feature",
    })
}

/// Without the `security` feature a secure participant cannot be created.
#[cfg(not(feature = "security"))]
fn security_plugin(
    _config: &crate::SecurityConfig,
    _prefix: GuidPrefix,
    _domain_id: u32,
    _unix_at_origin: SystemTime,
) -> DdsResult<Box<dyn ferrodds_rtps::security::ParticipantSecurity>> {
    Err(DdsError::Unsupported {
        what: "DDS Security: FerroDDS was built without the `security` feature",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_prefixes_start_with_vendor_and_differ() {
        let a = new_guid_prefix();
        let b = new_guid_prefix();
        assert_eq!(&a.0[..2], &VENDOR_ID);
        assert_eq!(&a.0[4..8], &std::process::id().to_be_bytes());
        assert_ne!(a, b);
        assert_eq!(a.0[2..4], b.0[2..4], "same host id within a process");
    }

    fn iface(loopback: bool, mtu: Option<u32>) -> ferrodds_transport::NetworkInterface {
        ferrodds_transport::NetworkInterface {
            name: "x".into(),
            index: 1,
            address: std::net::Ipv4Addr::new(10, 0, 0, 1),
            prefix_len: 24,
            loopback,
            multicast: true,
            up: true,
            mtu,
        }
    }

    #[test]
    fn datagrams_fit_the_interface_mtu_unless_ip_fragmentation_is_asked_for() {
        let c = Config::default();
        assert_eq!(send_message_size(&c, &iface(false, Some(1500))), 1472);
        assert_eq!(send_message_size(&c, &iface(false, Some(9000))), 8972);
        // Loopback (MTU 65536) and unknown MTUs keep max_message_size.
        assert_eq!(send_message_size(&c, &iface(true, Some(65536))), 65_000);
        assert_eq!(send_message_size(&c, &iface(false, None)), 65_000);
        // An absurd MTU is not believed below the IPv4 minimum.
        assert_eq!(send_message_size(&c, &iface(false, Some(100))), 548);
        let c = Config::default().ip_fragmentation(true);
        assert_eq!(send_message_size(&c, &iface(false, Some(1500))), 65_000);
        let c = Config::default().max_message_size(1200);
        assert_eq!(send_message_size(&c, &iface(false, Some(1500))), 1200);
    }
}
