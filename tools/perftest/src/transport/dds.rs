//! DDS backend over the FerroDDS public API (the default mode).
//!
//! One participant per process; topics `Throughput`, `Latency` and `Announcement` of the
//! perftest type selected by `-keyed` and the data size (`TestData_t`,
//! `TestDataKeyed_t`, or the `*Large_t` types above 65470 payload bytes or with
//! `-unbounded`). QoS follows spec 4 as far as FerroDDS has the policies:
//! Throughput/Latency reliable (or best effort with `-bestEffort`) with KEEP_ALL
//! histories bounded by `-sendQueueSize` on the throughput writer, Announcement reliable
//! and TRANSIENT_LOCAL. Readers are polled with `wait_for_data` + `take` from the
//! harness's receive threads (the "WaitSets" receive mode). Each writer keeps one sample
//! whose payload buffer is reused, so writing does not allocate in the tool.

use std::net::Ipv4Addr;
use std::time::Duration;

use ferrodds::cdr::types::{TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds::{
    Config, DataReader, DataReaderQos, DataWriter, DataWriterQos, DdsError, DomainParticipant,
    Interface, Publisher, PublisherQos, ResourceLimits, Subscriber, SubscriberQos, TopicQos,
    TopicType,
};

use crate::error::PerftestError;
use crate::harness::stopping;
use crate::message::TestMessage;
use crate::options::{BatchingState, Options, CONTROL_INSTANCE, FINISHED_SIZE};
use crate::transport::{Reader, TopicKind, Transport, Writer};

/// Largest `-dataLen` that fits one RTPS datagram (FerroDDS does not fragment yet).
pub const MAX_UNFRAGMENTED_DATA_LEN: u64 = 64_800;

/// A perftest topic type: conversion from/to the harness's [`TestMessage`].
pub trait PerfType: TopicType + Default + Send + Sync + 'static {
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
    lines: Vec<String>,
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
        if matches!(batching, BatchingState::On(_)) {
            return Err(PerftestError::NotAvailable(
                "-batchSize: FerroDDS has no writer-side batching yet (use -batchSize 0)",
            ));
        }
        if opts.data_len > MAX_UNFRAGMENTED_DATA_LEN {
            return Err(PerftestError::NotAvailable(
                "-dataLen: samples above 64800 bytes need RTPS fragmentation, which FerroDDS does not send yet",
            ));
        }
        let mut config = Config::from_env().map_err(dds("reading FERRODDS_* overrides"))?;
        let mut loopback = false;
        if let Some(nic) = &opts.nic {
            let iface = Interface::parse(nic);
            loopback = matches!(iface, Interface::Address(a) if a.is_loopback()) || nic == "lo";
            config = config.interface(iface);
        }
        let mut peers: Vec<Ipv4Addr> = opts.peers.iter().filter_map(|p| p.parse().ok()).collect();
        if (loopback || !peers.is_empty()) && !opts.multicast {
            config = config.multicast(false);
            if peers.is_empty() {
                peers.push(Ipv4Addr::LOCALHOST);
            }
        }
        if opts.multicast {
            config = config.multicast(true);
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
        let multicast = config.multicast;
        let iface = format!("{:?}", config.interface);
        let participant = DomainParticipant::with_config(opts.domain, config)
            .map_err(dds("creating the participant"))?;
        let publisher = participant
            .create_publisher(PublisherQos::default())
            .map_err(dds("creating the publisher"))?;
        let subscriber = participant
            .create_subscriber(SubscriberQos::default())
            .map_err(dds("creating the subscriber"))?;
        let kind = match (opts.keyed, opts.large_data()) {
            (false, false) => TypeKind::Plain,
            (true, false) => TypeKind::Keyed,
            (false, true) => TypeKind::Large,
            (true, true) => TypeKind::KeyedLarge,
        };
        let peer_list: Vec<String> = peers.iter().map(ToString::to_string).collect();
        let mut lines = vec![
            "Kind: UDPv4 (FerroDDS RTPS)".to_string(),
            format!("Nic: {iface}"),
            format!(
                "Use Multicast: {}",
                if multicast { "True" } else { "False" }
            ),
            "message_size_max: 65000".to_string(),
        ];
        if !peer_list.is_empty() {
            lines.push(format!("Initial peers: {}", peer_list.join(", ")));
        }
        Ok(DdsTransport {
            participant,
            publisher,
            subscriber,
            kind,
            best_effort: opts.best_effort,
            transient_local: opts.durability == Some(1),
            send_queue: opts.effective_send_queue_size().min(u64::from(u32::MAX)) as u32,
            max_payload: opts.payload_len().max(FINISHED_SIZE + 1),
            lines,
        })
    }

    fn writer_qos(&self, topic: TopicKind) -> DataWriterQos {
        let mut q = DataWriterQos::default()
            .reliable()
            .max_blocking_time(Duration::from_millis(100));
        match topic {
            TopicKind::Throughput => {
                if self.best_effort {
                    q = q.best_effort();
                }
                if self.transient_local {
                    q = q.transient_local();
                }
                q = q.keep_all().resource_limits(ResourceLimits {
                    max_samples: Some(self.send_queue),
                    max_instances: None,
                    max_samples_per_instance: Some(self.send_queue),
                });
            }
            TopicKind::Latency => {
                if self.best_effort {
                    q = q.best_effort();
                }
                q = q.keep_all().resource_limits(ResourceLimits {
                    max_samples: Some(self.send_queue.max(100)),
                    max_instances: None,
                    max_samples_per_instance: Some(self.send_queue.max(100)),
                });
            }
            TopicKind::Announcement => {
                q = q.transient_local().keep_all();
            }
        }
        q
    }

    fn reader_qos(&self, topic: TopicKind) -> DataReaderQos {
        let mut q = DataReaderQos::default().reliable().keep_all();
        match topic {
            TopicKind::Throughput | TopicKind::Latency => {
                if self.best_effort {
                    q = q.best_effort();
                }
                if topic == TopicKind::Throughput && self.transient_local {
                    q = q.transient_local();
                }
            }
            TopicKind::Announcement => q = q.transient_local(),
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
        Ok(Box::new(DdsWriter { writer, sample }))
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
        Ok(Box::new(DdsReader { reader }))
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

    fn reliable(&self) -> bool {
        !self.best_effort
    }

    fn needs_discovery(&self) -> bool {
        true
    }
}

struct DdsWriter<T: PerfType> {
    writer: DataWriter<T>,
    sample: T,
}

impl<T: PerfType> Writer for DdsWriter<T> {
    fn write(&mut self, m: &TestMessage) -> Result<(), PerftestError> {
        self.sample.fill(m);
        loop {
            match self.writer.write(&self.sample) {
                Ok(()) => return Ok(()),
                // KEEP_ALL queue full of unacknowledged samples: keep blocking (strict
                // reliability), but let Ctrl-C through.
                Err(DdsError::Timeout) if !stopping() => continue,
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
        Ok(())
    }

    fn matched(&self) -> u32 {
        self.writer.matched_count()
    }

    fn wait_for_acks(&mut self, timeout: Duration) -> Result<(), PerftestError> {
        match self.writer.wait_for_acknowledgments(timeout) {
            Ok(()) | Err(DdsError::Timeout) => Ok(()),
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
    reader: DataReader<T>,
}

impl<T: PerfType> Reader for DdsReader<T> {
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
        let samples = self.reader.take().map_err(dds("taking samples"))?;
        let mut n = 0;
        for s in &samples {
            if let Some(d) = s.data() {
                f(&d.to_message());
                n += 1;
            }
        }
        Ok(n)
    }

    fn matched(&self) -> u32 {
        self.reader.matched_count()
    }
}
