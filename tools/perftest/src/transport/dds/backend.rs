//! The DDS backend's implementation over the FerroDDS public API (feature `dds`).

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use ferrodds::cdr::types::{TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds::{
    Batching, CaptureConfig, CaptureOverflow, Config, DataReader, DataReaderListener,
    DataReaderQos, DataWriter, DataWriterQos, DdsError, DomainParticipant, FlatType,
    FlowController, Interface, Publisher, PublisherQos, QosProvider, ResourceLimits, Subscriber,
    SubscriberQos, TopicQos, Transports, WanConfig,
};

use crate::error::PerftestError;
use crate::harness::stopping;
use crate::message::TestMessage;
use crate::options::{
    parse_tcp_peer, parse_tls_peer, parse_wan_peer, BatchingState, FlowControllerName, Options,
    Role, CONTROL_INSTANCE, DEFAULT_MULTICAST_GROUPS, FINISHED_SIZE,
};

/// The multicast groups of the topics (Throughput, Latency, Announcement): `-multicastAddr`'s,
/// or with `-multicast` alone RTI Perftest's defaults. (Each side then joins only the groups
/// of its own readers: a publisher does not receive its own data looped back, as it would
/// on a group every participant joins.)
fn topic_groups(opts: &Options) -> Option<[Ipv4Addr; 3]> {
    opts.multicast_groups
        .or(opts.multicast.then_some(DEFAULT_MULTICAST_GROUPS))
}
use crate::qos_profiles::{self, qos_source, QosSource};
use crate::transport::{OnMessage, Reader, TopicKind, Transport, Writer};

/// The FerroDDS flow controller of a `-flowController` name.
pub fn flow_controller(name: FlowControllerName) -> FlowController {
    match name {
        // RTI's default flow controller does not pace.
        FlowControllerName::Default => FlowController {
            max_tokens: u32::MAX,
            tokens_per_period: u32::MAX,
            bytes_per_token: 65536,
            period: Duration::from_millis(1),
        },
        FlowControllerName::Gbps1 => FlowController::GBPS_1,
        FlowControllerName::Gbps10 => FlowController::GBPS_10,
    }
}

/// A perftest topic type: conversion from/to the harness's [`TestMessage`].
pub trait PerfType: FlatType + Default + Send + Sync + 'static {
    /// Copies `m` into `self`, resizing the reused payload buffer.
    fn fill(&mut self, m: &TestMessage);
    /// The header fields and payload length.
    fn to_message(&self) -> TestMessage;
    /// Reserves payload capacity.
    fn reserve(&mut self, n: usize);
}

macro_rules! perf_type {
    ($t:ty) => {
        impl PerfType for $t {
            fn fill(&mut self, m: &TestMessage) {
                self.key = m.key;
                self.entity_id = m.entity_id;
                self.seq_num = m.seq_num;
                self.timestamp_sec = m.timestamp_sec;
                self.timestamp_usec = m.timestamp_usec;
                self.latency_ping = m.latency_ping;
                self.bin_data.resize(m.size, 0);
            }
            fn to_message(&self) -> TestMessage {
                TestMessage {
                    key: self.key,
                    entity_id: self.entity_id,
                    seq_num: self.seq_num,
                    timestamp_sec: self.timestamp_sec,
                    timestamp_usec: self.timestamp_usec,
                    latency_ping: self.latency_ping,
                    size: self.bin_data.len(),
                }
            }
            fn reserve(&mut self, n: usize) {
                self.bin_data.reserve(n);
            }
        }
    };
}

perf_type!(TestData);
perf_type!(TestDataKeyed);
perf_type!(TestDataLarge);
perf_type!(TestDataKeyedLarge);

fn dds(context: &'static str) -> impl FnOnce(DdsError) -> PerftestError {
    move |source| PerftestError::Dds { context, source }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeKind {
    Plain,
    Keyed,
    Large,
    KeyedLarge,
}

/// The FerroDDS backend.
pub struct DdsTransport {
    participant: DomainParticipant,
    publisher: Publisher,
    subscriber: Subscriber,
    kind: TypeKind,
    best_effort: bool,
    transient_local: bool,
    send_queue: u32,
    max_payload: usize,
    /// `-zeroCopy`: the throughput writer writes through writer loans, and the throughput
    /// reader reads in place.
    zero_copy: bool,
    /// `-checkConsistency`.
    check_consistency: bool,
    /// Batch size in bytes and samples per batch (throughput writer).
    batch: Option<(u64, u64)>,
    asynchronous: Option<FlowController>,
    lines: Vec<String>,
    /// The "Secure Configuration" block (empty without DDS Security).
    secure_lines: Vec<String>,
    /// `-doNotDropNetworkCapture`: the capture file stays.
    keep_capture: bool,
    /// The QoS profiles' writer and reader QoS per topic (index: [`profile_index`]).
    writer_profiles: [DataWriterQos; 3],
    reader_profiles: [DataReaderQos; 3],
    /// `-multicastAddr`: the Throughput, Latency and Announcement readers' groups.
    multicast_groups: Option<[Ipv4Addr; 3]>,
}

/// The index of a topic's profile in [`crate::qos_profiles::PROFILES`].
fn profile_index(topic: TopicKind) -> usize {
    match topic {
        TopicKind::Throughput => 0,
        TopicKind::Latency => 1,
        TopicKind::Announcement => 2,
    }
}

/// The profiles' QoS per topic and the publisher/subscriber QoS of the default profile.
type Profiles = (
    [DataWriterQos; 3],
    [DataReaderQos; 3],
    PublisherQos,
    SubscriberQos,
);

/// Loads the QoS profiles of the run (`-qosFile`, `-qosLibrary`, `-noXmlQos`).
fn load_profiles(opts: &Options) -> Result<Profiles, PerftestError> {
    let provider = match qos_source(opts) {
        QosSource::File(path) => QosProvider::from_file(path)?,
        QosSource::BuiltIn => {
            QosProvider::from_str(qos_profiles::BUILT_IN, "built-in perftest_qos_profiles.xml")?
        }
    };
    let lib = &opts.qos_library;
    let mut writers: Vec<DataWriterQos> = Vec::new();
    let mut readers: Vec<DataReaderQos> = Vec::new();
    for (topic, profile) in qos_profiles::PROFILES {
        let name = format!("{lib}::{profile}");
        let w = provider.datawriter_qos(&name, topic)?;
        if w.batching.enabled {
            return Err(PerftestError::NotAvailable(
                "a perftest QoS profile enables <batch>: perftest sets batching with -batchSize (as its summary reports); remove <batch> from the profile",
            ));
        }
        writers.push(w);
        readers.push(provider.datareader_qos(&name, topic)?);
    }
    let (publisher, subscriber) = match provider.default_profile() {
        Some(d) => (provider.publisher_qos(&d)?, provider.subscriber_qos(&d)?),
        None => (PublisherQos::default(), SubscriberQos::default()),
    };
    let arr = |v: Vec<DataWriterQos>| -> [DataWriterQos; 3] {
        [v[0].clone(), v[1].clone(), v[2].clone()]
    };
    let arr_r = |v: Vec<DataReaderQos>| -> [DataReaderQos; 3] {
        [v[0].clone(), v[1].clone(), v[2].clone()]
    };
    Ok((arr(writers), arr_r(readers), publisher, subscriber))
}

impl std::fmt::Debug for DdsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DdsTransport")
            .field("kind", &self.kind)
            .finish()
    }
}

impl DdsTransport {
    /// Creates the participant, publisher and subscriber.
    pub fn new(opts: &Options, batching: BatchingState) -> Result<Self, PerftestError> {
        let mut config = Config::from_env().map_err(dds("reading FERRODDS_* overrides"))?;
        let mut loopback = false;
        if let Some(nic) = &opts.nic {
            let iface = Interface::parse(nic);
            loopback = matches!(iface, Interface::Address(a) if a.is_loopback()) || nic == "lo";
            config = config.interface(iface);
        }
        let tls = opts.transport.as_deref() == Some("TLS");
        let wan = opts.transport.as_deref() == Some("UDPv4_WAN");
        let tcp_only = opts.transport.as_deref() == Some("TCP") || tls;
        let tcp = tcp_only || opts.enable_tcp;
        let shm_only = opts.transport.as_deref() == Some("SHMEM");
        // As RTI's: without -transport, UDPv4 and shared memory (FerroDDS peers on this host
        // and in this network namespace use it for user data, every other peer UDPv4).
        let default_transports = opts.transport.is_none();
        // (Without the `shared-memory` feature the option parser refused SHMEM: UDPv4 alone.)
        let shm = cfg!(feature = "shared-memory")
            && (shm_only || opts.enable_shared_memory || default_transports);
        if shm_only {
            // One host: discovery over UDPv4 on the loopback interface, user data through
            // shared memory (the option parser refused -nic, -peer and -multicast).
            loopback = true;
            config = config.interface(Interface::Name("lo".into()));
        }
        if shm {
            config = config.shared_memory(true);
        }
        // (Validated by the option parser: TCP peers are locators, UDP ones IPv4 addresses.)
        let wan_peers: Vec<SocketAddrV4> = if wan {
            opts.peers
                .iter()
                .filter_map(|p| parse_wan_peer(p).ok())
                .collect()
        } else {
            Vec::new()
        };
        let (mut peers, tcp_peers): (Vec<Ipv4Addr>, Vec<SocketAddrV4>) = if wan {
            (Vec::new(), Vec::new())
        } else if tls {
            let t = opts.peers.iter().filter_map(|p| parse_tls_peer(p).ok());
            (Vec::new(), t.collect())
        } else if tcp_only {
            let t = opts.peers.iter().filter_map(|p| parse_tcp_peer(p).ok());
            (Vec::new(), t.collect())
        } else {
            let udp = opts.peers.iter().filter_map(|p| p.parse().ok()).collect();
            let t = opts
                .peers
                .iter()
                .filter(|p| opts.enable_tcp && p.parse::<Ipv4Addr>().is_err())
                .filter_map(|p| parse_tcp_peer(p).ok());
            (udp, t.collect())
        };
        let tcp_port = opts.tcp_server_port.unwrap_or(ferrodds::DEFAULT_TCP_PORT);
        if tcp {
            config = config
                .transports(if tls {
                    Transports::Tlsv4
                } else if tcp_only {
                    Transports::Tcpv4
                } else {
                    Transports::Udpv4AndTcpv4
                })
                .tcp_port(tcp_port)
                .tcp_peers(tcp_peers.clone());
        }
        let tls_source = if tls {
            let (c, source) = with_tls(config, opts)?;
            config = c;
            Some(source)
        } else {
            None
        };
        let wan_line = if wan {
            let host_port = opts.wan_host_port.unwrap_or(ferrodds::DEFAULT_WAN_PORT);
            let public = opts.wan_public_address.map(|a| {
                SocketAddrV4::new(*a.ip(), if a.port() == 0 { host_port } else { a.port() })
            });
            config = config
                .udp_wan(WanConfig {
                    host_port,
                    public_address: public,
                })
                .wan_peers(wan_peers.clone());
            Some(format!(
                "UDPv4_WAN Host Port: {host_port}, Public Address: {}",
                public.map_or_else(|| "the interface address".to_string(), |a| a.to_string())
            ))
        } else {
            None
        };
        if tcp_only || wan {
            config = config.multicast(false);
        } else if (loopback || !peers.is_empty() || opts.no_multicast) && !opts.multicast {
            config = config.multicast(false);
            if peers.is_empty() {
                peers.push(Ipv4Addr::LOCALHOST);
            }
        }
        if opts.multicast {
            // RTI's -multicast: user data goes to the readers' multicast group.
            config = config.multicast(true).multicast_user_data(true);
        }
        if let Some([throughput, latency, announcement]) = topic_groups(opts) {
            // Each topic's readers announce their own group; this side
            // receives on the groups of the readers it creates.
            config = config.multicast_groups(match opts.role {
                Role::Publisher => vec![latency, announcement],
                Role::Subscriber => vec![throughput],
            });
        }
        if !peers.is_empty() {
            config = config.initial_peers(peers.clone());
        }
        if let Some(b) = opts.receive_buffer_size {
            config = config.recv_buffer_bytes(b as usize);
        }
        if let Some(b) = opts.send_buffer_size {
            config = config.send_buffer_bytes(b as usize);
        }
        // "Use Multicast" says whether user data goes by multicast (RTI's meaning), not
        // whether discovery does.
        let multicast = config.multicast_user_data;
        let limits_line = opts.show_resource_limits.then(|| limits_line(&config));
        if opts.network_capture {
            let (role, id) = match opts.role {
                Role::Publisher => ("pub", opts.pid),
                Role::Subscriber => ("sub", opts.sid),
            };
            config = config.capture(Some(
                CaptureConfig::prefix(format!("rtiperftest_network_capture_{role}_{id}_"))
                    .remove_user_data(opts.network_capture_no_user_data)
                    // As RTI's capture parses encrypted content: each protected message
                    // also in clear (the summary line says so).
                    .decrypted_view(opts.secure.is_some())
                    .overflow(if opts.keep_network_capture {
                        CaptureOverflow::Block
                    } else {
                        CaptureOverflow::Drop
                    }),
            ));
        }
        let secure_lines = match &opts.secure {
            Some(s) => {
                let (c, lines) = with_security(config, opts, s)?;
                config = c;
                lines
            }
            None => Vec::new(),
        };
        // Before the participant: a bad profiles file fails without touching the network.
        let (writer_profiles, reader_profiles, publisher_qos, subscriber_qos) =
            load_profiles(opts)?;
        let participant = DomainParticipant::with_config(opts.domain, config)
            .map_err(dds("creating the participant"))?;
        let publisher = participant
            .create_publisher(publisher_qos)
            .map_err(dds("creating the publisher"))?;
        let subscriber = participant
            .create_subscriber(subscriber_qos)
            .map_err(dds("creating the subscriber"))?;
        let kind = match (opts.keyed, opts.large_data()) {
            (false, false) => TypeKind::Plain,
            (true, false) => TypeKind::Keyed,
            (false, true) => TypeKind::Large,
            (true, true) => TypeKind::KeyedLarge,
        };
        let mut peer_list: Vec<String> = peers.iter().map(ToString::to_string).collect();
        let scheme = if tls { "tlsv4_lan" } else { "tcpv4_lan" };
        peer_list.extend(tcp_peers.iter().map(|p| format!("{scheme}://{p}")));
        peer_list.extend(wan_peers.iter().map(|p| format!("udpv4_wan://{p}")));
        let kind_line = if wan {
            "Kind: UDPv4_WAN (FerroDDS RTPS over UDPv4 on one port, public address announced)"
        } else if tls {
            "Kind: TLS (FerroDDS RTPS over TLS 1.3 over TCPv4, Cyclone DDS framing inside; mutual authentication)"
        } else if tcp_only {
            "Kind: TCP (FerroDDS RTPS over TCPv4, Cyclone DDS framing)"
        } else if tcp && shm {
            "Kind: UDPv4 + SHMEM + TCP (default + -enableTCP: FerroDDS RTPS; FerroDDS peers on this host through shared memory, TCP with Cyclone DDS framing)"
        } else if tcp {
            "Kind: UDPv4 + TCP (FerroDDS RTPS; TCP with Cyclone DDS framing)"
        } else if shm_only {
            "Kind: SHMEM (FerroDDS RTPS through shared memory on this host; discovery over UDPv4 on lo)"
        } else if shm && default_transports {
            "Kind: UDPv4 + SHMEM (default: FerroDDS RTPS; FerroDDS peers on this host through shared memory)"
        } else if shm {
            "Kind: UDPv4 + SHMEM (FerroDDS RTPS; FerroDDS peers on this host through shared memory)"
        } else {
            "Kind: UDPv4 (FerroDDS RTPS)"
        };
        let mut lines = vec![kind_line.to_string()];
        // As RTI: the `-nic` value as given, and no line without `-nic`.
        lines.extend(opts.nic.as_ref().map(|nic| format!("Nic: {nic}")));
        lines.extend([
            format!(
                "Use Multicast: {}",
                if multicast { "True" } else { "False" }
            ),
            "message_size_max: 65000".to_string(),
        ]);
        if let Some([t, l, a]) = topic_groups(opts) {
            lines.push(format!(
                "Multicast groups: Throughput {t}, Latency {l}, Announcement {a}"
            ));
        }
        if tcp {
            lines.push(format!("TCP Server Bind Port: {tcp_port}"));
        }
        if let Some(l) = wan_line {
            lines.push(l);
        }
        if let Some(source) = &tls_source {
            lines.push(format!("TLS Identity: {source}"));
        }
        if opts.asynchronous {
            lines.push(format!("Flow Controller: {}", opts.flow_controller.name()));
        }
        if !peer_list.is_empty() {
            lines.push(format!("Initial peers: {}", peer_list.join(", ")));
        }
        lines.extend(limits_line);
        if let Some(c) = participant.capture_stats() {
            lines.push(format!(
                "Network capture file: {} ({}{})",
                c.path.display(),
                if opts.keep_network_capture {
                    "kept, every message recorded"
                } else {
                    "deleted at the end, messages dropped from it when the disk falls behind"
                },
                if opts.network_capture_no_user_data {
                    "; user data removed"
                } else {
                    ""
                }
            ));
            if opts.secure.is_some() {
                lines.push(
                    "Network capture decrypted view: each protected message is followed by its clear form (packet comment 'decrypted view'); the file holds what DDS Security protects"
                        .to_string(),
                );
            }
        }
        Ok(DdsTransport {
            keep_capture: opts.keep_network_capture,
            participant,
            publisher,
            subscriber,
            kind,
            best_effort: opts.best_effort,
            transient_local: opts.durability == Some(1),
            send_queue: opts.effective_send_queue_size().min(u64::from(u32::MAX)) as u32,
            max_payload: opts.payload_len().max(FINISHED_SIZE + 1),
            // -loaningSendReceive: the same loans and serialized takes, on any transport.
            zero_copy: opts.zero_copy || opts.loaning,
            check_consistency: opts.check_consistency,
            batch: match batching {
                // The history must hold a whole batch of the smallest size (-scan sizes
                // differ): a batch is only sent when full or flushed.
                BatchingState::On(b) => {
                    let smallest = opts.sizes().into_iter().min().unwrap_or(opts.data_len);
                    Some((b, (b / smallest.max(1)).max(1)))
                }
                _ => None,
            },
            asynchronous: opts
                .asynchronous
                .then(|| flow_controller(opts.flow_controller)),
            lines,
            secure_lines,
            writer_profiles,
            reader_profiles,
            multicast_groups: topic_groups(opts),
        })
    }

    /// The writer QoS of a topic: its profile, then what perftest's options set (see
    /// `perftest_qos_profiles.xml`).
    fn writer_qos(&self, topic: TopicKind) -> DataWriterQos {
        let mut q = self.writer_profiles[profile_index(topic)].clone();
        match topic {
            TopicKind::Throughput => {
                q = if self.best_effort {
                    q.best_effort()
                } else {
                    q.reliable()
                };
                q = if self.transient_local {
                    q.transient_local()
                } else {
                    q.volatile()
                };
                // -sendQueueSize counts batches when batching (RTI's max_batches).
                let queue = match self.batch {
                    Some((bytes, per_batch)) => {
                        q = q.batching(Batching::bytes(bytes as usize));
                        u64::from(self.send_queue).saturating_mul(per_batch)
                    }
                    None => u64::from(self.send_queue),
                };
                let queue = u32::try_from(queue).unwrap_or(u32::MAX);
                let limits = ResourceLimits {
                    max_samples: Some(queue),
                    max_samples_per_instance: Some(queue),
                    ..q.resource_limits
                };
                q = q.resource_limits(limits);
                if let Some(fc) = self.asynchronous {
                    q = q.asynchronous(fc);
                }
            }
            TopicKind::Latency => {
                q = if self.best_effort {
                    q.best_effort()
                } else {
                    q.reliable()
                };
            }
            // The profile's, never switched to best effort (as RTI).
            TopicKind::Announcement => {}
        }
        q
    }

    /// The reader QoS of a topic: its profile, then what perftest's options set.
    fn reader_qos(&self, topic: TopicKind) -> DataReaderQos {
        let mut q = self.reader_profiles[profile_index(topic)].clone();
        if topic != TopicKind::Announcement {
            q = if self.best_effort {
                q.best_effort()
            } else {
                q.reliable()
            };
        }
        if topic == TopicKind::Throughput {
            q = if self.transient_local {
                q.transient_local()
            } else {
                q.volatile()
            };
        }
        if let Some(groups) = self.multicast_groups {
            q = q.multicast_group(Some(groups[profile_index(topic)]));
        }
        q
    }

    fn make_writer<T: PerfType>(&self, topic: TopicKind) -> Result<Box<dyn Writer>, PerftestError> {
        let t = self
            .participant
            .create_topic::<T>(topic.name(), TopicQos::default())
            .map_err(dds("creating a topic"))?;
        let writer = self
            .publisher
            .create_datawriter(&t, self.writer_qos(topic))
            .map_err(dds("creating a writer"))?;
        let mut sample = T::default();
        sample.reserve(self.max_payload);
        Ok(Box::new(DdsWriter {
            writer,
            sample,
            // Throughput samples through loans; the latency and announcement topics'
            // occasional samples as values.
            zero_copy: self.zero_copy && topic == TopicKind::Throughput,
        }))
    }

    fn make_reader<T: PerfType>(&self, topic: TopicKind) -> Result<Box<dyn Reader>, PerftestError> {
        let t = self
            .participant
            .create_topic::<T>(topic.name(), TopicQos::default())
            .map_err(dds("creating a topic"))?;
        let reader = self
            .subscriber
            .create_datareader(&t, self.reader_qos(topic))
            .map_err(dds("creating a reader"))?;
        // -zeroCopy: throughput samples are read in their serialized form (only the header
        // fields), in place in the writer's shared memory when it sent them by reference.
        let mode = if self.zero_copy && topic == TopicKind::Throughput {
            reader.set_in_place(true);
            ReadMode::InPlace {
                check_consistency: self.check_consistency,
            }
        } else {
            ReadMode::Decoded
        };
        Ok(Box::new(DdsReader {
            reader: Arc::new(reader),
            listener: None,
            mode,
        }))
    }
}

impl Transport for DdsTransport {
    fn create_writer(&mut self, topic: TopicKind) -> Result<Box<dyn Writer>, PerftestError> {
        match self.kind {
            TypeKind::Plain => self.make_writer::<TestData>(topic),
            TypeKind::Keyed => self.make_writer::<TestDataKeyed>(topic),
            TypeKind::Large => self.make_writer::<TestDataLarge>(topic),
            TypeKind::KeyedLarge => self.make_writer::<TestDataKeyedLarge>(topic),
        }
    }

    fn create_reader(&mut self, topic: TopicKind) -> Result<Box<dyn Reader>, PerftestError> {
        match self.kind {
            TypeKind::Plain => self.make_reader::<TestData>(topic),
            TypeKind::Keyed => self.make_reader::<TestDataKeyed>(topic),
            TypeKind::Large => self.make_reader::<TestDataLarge>(topic),
            TypeKind::KeyedLarge => self.make_reader::<TestDataKeyedLarge>(topic),
        }
    }

    fn describe(&self) -> Vec<String> {
        self.lines.clone()
    }

    fn secure_configuration(&self) -> Vec<String> {
        self.secure_lines.clone()
    }

    fn security_failures(&self) -> Vec<String> {
        if self.secure_lines.is_empty() {
            return Vec::new();
        }
        let mut f = self.participant.authentication_failures();
        if self
            .participant
            .engine_stats()
            .unauthenticated_participants_ignored
            > 0
        {
            f.push("a participant without DDS Security was ignored: the governance does not allow unauthenticated participants (give the other side the same -secure* options)".to_string());
        }
        f
    }

    fn reliable(&self) -> bool {
        !self.best_effort
    }

    fn needs_discovery(&self) -> bool {
        true
    }

    fn finish_capture(&mut self) -> Vec<String> {
        let Some(c) = self.participant.stop_capture() else {
            return Vec::new();
        };
        let file = if self.keep_capture {
            format!("file {} kept", c.path.display())
        } else {
            match std::fs::remove_file(&c.path) {
                Ok(()) => format!(
                    "file {} deleted (-doNotDropNetworkCapture keeps it)",
                    c.path.display()
                ),
                Err(e) => format!("file {} could not be deleted: {e}", c.path.display()),
            }
        };
        let mut line = format!(
            "Network capture: {} frames written, {} dropped, {file}",
            c.frames_written, c.frames_dropped
        );
        if c.user_data_bytes_removed > 0 {
            line.push_str(&format!(
                ", {} bytes of user data removed",
                c.user_data_bytes_removed
            ));
        }
        if let Some(e) = c.error {
            line.push_str(&format!("; capture stopped by a write error: {e}"));
        }
        vec![line]
    }

    fn resource_report(&self, all: bool) -> Vec<String> {
        let s = self.participant.engine_stats();
        let rx_drops: u64 = self
            .participant
            .transport_stats()
            .iter()
            .map(|(_, t)| t.receive_buffer_drops)
            .sum();
        let counts = [
            ("refused participants", s.refused_participants),
            ("refused endpoints", s.refused_endpoints),
            ("out-of-order overflows", s.out_of_order_overflows),
            ("reassembly overflows", s.reassembly_overflows),
            ("receive buffer drops", rx_drops),
        ];
        if !all && counts.iter().all(|&(_, n)| n == 0) {
            return Vec::new();
        }
        let list: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        vec![format!("Resource limits exceeded: {}", list.join(", "))]
    }
}

/// The `-showResourceLimits` line of the start-up summary: the participant's bounds on what
/// peers can make it keep.
fn limits_line(config: &Config) -> String {
    let l = &config.peer_limits;
    let mib = |b: usize| b >> 20;
    format!(
        "Resource limits: remote participants {}, remote endpoints {} writers + {} readers \
         ({} per participant), out-of-order {} samples / {} MiB per writer, reassembly {} \
         samples / {} MiB per writer, {} MiB in all, max sample {} MiB, receive buffer {} KiB",
        l.max_remote_participants,
        l.max_remote_endpoints,
        l.max_remote_endpoints,
        l.max_endpoints_per_participant,
        l.max_out_of_order_samples,
        mib(l.max_out_of_order_bytes),
        config.max_reassembly_samples,
        mib(config.max_reassembly_bytes.0),
        mib(config.max_reassembly_bytes.1),
        config.max_sample_size >> 20,
        config.recv_buffer_bytes >> 10,
    )
}

struct DdsWriter<T: PerfType> {
    writer: DataWriter<T>,
    sample: T,
    /// Write through loans (`-zeroCopy`).
    zero_copy: bool,
}

impl<T: PerfType> DdsWriter<T> {
    /// `-zeroCopy`: the sample written in place through a loan, its serialized header
    /// fields filled in and `bin_data` left as the loan holds it (the tool never reads the
    /// payload; a new buffer is zeros).
    fn write_loaned(&mut self, m: &TestMessage) -> Result<(), PerftestError> {
        let body_len = crate::message::BODY_HEADER_LEN + m.size;
        loop {
            let mut loan = self
                .writer
                .loan_sample(body_len)
                .map_err(dds("lending a sample"))?;
            crate::message::write_body_header(loan.body_mut(), m);
            match self.writer.write_loan(loan) {
                Ok(()) => return Ok(()),
                // As `write`: a full KEEP_ALL queue keeps blocking, Ctrl-C gets through.
                Err(DdsError::Timeout) if !stopping() => continue,
                Err(DdsError::Timeout) => return Ok(()),
                Err(e) => {
                    return Err(PerftestError::Dds {
                        context: "writing a loaned sample",
                        source: e,
                    })
                }
            }
        }
    }
}

impl<T: PerfType> Writer for DdsWriter<T> {
    fn write(&mut self, m: &TestMessage) -> Result<(), PerftestError> {
        if self.zero_copy {
            return self.write_loaned(m);
        }
        self.sample.fill(m);
        loop {
            match self.writer.write(&self.sample) {
                Ok(()) => return Ok(()),
                // KEEP_ALL queue full of unacknowledged samples: keep blocking (strict
                // reliability), but let Ctrl-C through. RTI's queue counts batches, so a
                // full queue never holds an unsent one: send what batching holds.
                Err(DdsError::Timeout) if !stopping() => {
                    self.writer.flush().map_err(|e| PerftestError::Dds {
                        context: "flushing the writer",
                        source: e,
                    })?;
                    continue;
                }
                Err(DdsError::Timeout) => return Ok(()),
                Err(e) => {
                    return Err(PerftestError::Dds {
                        context: "writing a sample",
                        source: e,
                    })
                }
            }
        }
    }

    fn flush(&mut self) -> Result<(), PerftestError> {
        // Batching: send what the writer holds (RTI's DataWriter::flush); a no-op otherwise.
        self.writer.flush().map_err(|e| PerftestError::Dds {
            context: "flushing the writer",
            source: e,
        })
    }

    fn matched(&self) -> u32 {
        self.writer.matched_count()
    }

    fn wait_for_acks(&mut self, timeout: Duration) -> Result<bool, PerftestError> {
        match self.writer.wait_for_acknowledgments(timeout) {
            Ok(()) => Ok(true),
            Err(DdsError::Timeout) => Ok(false),
            Err(e) => Err(PerftestError::Dds {
                context: "waiting for acknowledgements",
                source: e,
            }),
        }
    }

    fn register_instances(&mut self, n: u64) -> Result<(), PerftestError> {
        if !T::IS_KEYED {
            return Ok(());
        }
        let keys = (0..n.min(u64::from(CONTROL_INSTANCE))).map(|i| i as u32);
        for k in keys.chain(std::iter::once(CONTROL_INSTANCE)) {
            self.sample.fill(&TestMessage {
                key: k.to_le_bytes(),
                ..TestMessage::default()
            });
            self.writer
                .register_instance(&self.sample)
                .map_err(dds("registering an instance"))?;
        }
        Ok(())
    }
}

struct DdsReader<T: PerfType> {
    reader: Arc<DataReader<T>>,
    listener: Option<Arc<Forward<T>>>,
    /// How samples are taken.
    mode: ReadMode,
}

/// How a perftest reader takes its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadMode {
    /// Decoded values (`take_each`).
    Decoded,
    /// `-zeroCopy`: serialized bodies (`take_serialized_each`) of which only the header
    /// fields are read, in place when the writer sent them by reference; with
    /// `-checkConsistency` a sample whose chunk was reused meanwhile is dropped.
    InPlace { check_consistency: bool },
}

/// Takes every sample of `reader` and hands each to `f`: decoded (`take_each`, into reused
/// values), or, [`ReadMode::InPlace`], as its serialized body of which only the header
/// fields are read (`take_serialized_each`: `bin_data` is neither decoded nor copied).
fn take_all<T: PerfType>(
    reader: &DataReader<T>,
    mode: ReadMode,
    f: &mut dyn FnMut(&TestMessage),
) -> Result<usize, DdsError> {
    let mut n = 0;
    if let ReadMode::InPlace { check_consistency } = mode {
        reader.take_serialized_each(usize::MAX, |s| {
            if let Some(m) = s.body().and_then(crate::message::body_message) {
                // RTI's -checkConsistency: the header just read is the sample's only if
                // the writer's chunk is unchanged.
                if check_consistency && !s.is_consistent() {
                    return;
                }
                f(&m);
                n += 1;
            }
        })?;
    } else {
        reader.take_each(usize::MAX, |data, _| {
            if let Some(d) = data {
                f(&d.to_message());
                n += 1;
            }
        })?;
    }
    Ok(n)
}

/// The listener: takes every sample on the receive thread and hands it to the callback.
struct Forward<T: PerfType> {
    reader: Weak<DataReader<T>>,
    /// As [`DdsReader::mode`].
    mode: ReadMode,
    callback: Mutex<Option<OnMessage>>,
    /// Samples may be waiting (set by every call; cleared by the caller holding the
    /// callback before it takes).
    again: AtomicBool,
}

impl<T: PerfType> Forward<T> {
    /// Hands every sample to the callback in place (`take_each`: no per-call vector, and
    /// the reader decodes the next samples into these values' buffers).
    fn deliver(reader: &DataReader<T>, mode: ReadMode, f: &mut OnMessage) {
        let _ = take_all(reader, mode, &mut |m| f(m));
    }
}

impl<T: PerfType> DataReaderListener for Forward<T> {
    fn on_data_available(&self) {
        let Some(reader) = self.reader.upgrade() else {
            return;
        };
        // `again` says "samples may be waiting". Whoever holds the callback takes
        // until it is clear; a call finding the callback busy (another receive
        // thread, or a write inside the callback) only sets it. The holder checks it
        // again after unlocking, so no notification is lost.
        self.again.store(true, Ordering::Release);
        while self.again.load(Ordering::Acquire) {
            let Ok(mut guard) = self.callback.try_lock() else {
                return;
            };
            while self.again.swap(false, Ordering::AcqRel) {
                if let Some(f) = guard.as_mut() {
                    Self::deliver(&reader, self.mode, f);
                }
            }
        }
    }
}

impl<T: PerfType> Reader for DdsReader<T> {
    fn listen(&mut self, f: OnMessage) -> Result<Option<OnMessage>, PerftestError> {
        let fwd = Arc::new(Forward {
            reader: Arc::downgrade(&self.reader),
            mode: self.mode,
            callback: Mutex::new(Some(f)),
            again: AtomicBool::new(false),
        });
        self.reader
            .set_listener(Some(Arc::clone(&fwd) as Arc<dyn DataReaderListener>));
        self.listener = Some(Arc::clone(&fwd));
        // Samples that arrived before the listener was installed.
        fwd.on_data_available();
        Ok(None)
    }

    fn unlisten(&mut self) {
        self.reader.set_listener(None);
        if let Some(fwd) = self.listener.take() {
            // Waits for a running call, then drops the callback.
            let mut g = fwd.callback.lock().unwrap_or_else(|e| e.into_inner());
            *g = None;
        }
    }

    fn receive(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&TestMessage),
    ) -> Result<usize, PerftestError> {
        if self.reader.cached_len() == 0
            && !self
                .reader
                .wait_for_data(timeout)
                .map_err(dds("waiting for data"))?
        {
            return Ok(0);
        }
        take_all(&self.reader, self.mode, f).map_err(dds("taking samples"))
    }

    fn matched(&self) -> u32 {
        self.reader.matched_count()
    }
}

/// `config` with the DDS Security of the `-secure*` options, and the lines describing it.
#[cfg(feature = "security")]
fn with_security(
    config: Config,
    opts: &Options,
    s: &crate::options::SecureOptions,
) -> Result<(Config, Vec<String>), PerftestError> {
    let (sec, lines) = crate::transport::secure::security_config(opts, s)?;
    Ok((config.security(sec), lines))
}

/// Without the `security` feature the option parser refused the `-secure*` options.
#[cfg(not(feature = "security"))]
fn with_security(
    _config: Config,
    _opts: &Options,
    _s: &crate::options::SecureOptions,
) -> Result<(Config, Vec<String>), PerftestError> {
    Err(PerftestError::NotAvailable(
        "DDS Security: this perftest was built without the `security` feature",
    ))
}

/// `config` with the TLS identity of `-transportCertAuthority` and the others, and where it
/// came from.
#[cfg(feature = "tls")]
fn with_tls(config: Config, opts: &Options) -> Result<(Config, String), PerftestError> {
    let (cfg, source) = crate::transport::tls::tls_config(opts)?;
    Ok((config.tls(cfg), source))
}

/// Without the `tls` feature the option parser refused `-transport TLS`.
#[cfg(not(feature = "tls"))]
fn with_tls(_config: Config, _opts: &Options) -> Result<(Config, String), PerftestError> {
    Err(PerftestError::NotAvailable(
        "TLS: this perftest was built without the `tls` feature",
    ))
}
