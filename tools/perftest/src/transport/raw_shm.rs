//! Raw shared memory (`-rawTransport -transport SHMEM`): the physical limit of the SHMEM rows.
//!
//! Each reader owns one FerroDDS shared-memory segment (`ferrodds_transport_shm`: a ring of
//! slots in `/dev/shm`, many senders into one receiver, a futex wake-up only when the
//! receiver sleeps) named by the port the raw UDP mode would bind (the RTPS port formula,
//! [`raw::port`]); writers copy each message into the reader's ring once. No RTPS, no
//! reliability: a message that finds the ring full is lost (as a datagram would be). One
//! host only, so `-nic`, `-peer` and `-multicast` are refused. Batching is done here as in
//! raw UDP: samples are appended to one buffer sent when the next would not fit the batch
//! size (at most one slot), or on flush.

use std::io::IoSlice;
use std::time::{Duration, Instant};

use ferrodds_transport_shm::{real_uid, SendError, ShmConfig, ShmReceiver, ShmSender};

use crate::error::PerftestError;
use crate::message::{decode_datagram, encoded_len, TestMessage};
use crate::options::{Options, FINISHED_SIZE};
use crate::transport::raw::{BatchingWriter, Endpoints, Sink};
use crate::transport::{raw, Capabilities, Reader, Support, TopicKind, Transport, Writer};

/// What the raw shared-memory backend can do: the raw UDP backend's capabilities, over
/// shared memory, without non-blocking sockets (sends never block).
pub const CAPABILITIES: Capabilities = Capabilities {
    data_len_mode: "the raw shared-memory transport (one sample per slot)",
    non_blocking_sockets: Support::No(
        "raw shared memory never blocks; -noBlockingSockets is for raw UDP",
    ),
    transports: &["SHMEM"],
    multicast: Support::No("raw shared memory has no multicast groups"),
    multicast_address: Support::No("raw shared memory has no multicast groups"),
    ..raw::CAPABILITIES
};

/// Least time between two attempts to open a reader's segment that does not exist yet.
const REOPEN_INTERVAL: Duration = Duration::from_millis(10);

/// The raw shared-memory backend.
#[derive(Debug)]
pub struct RawShmTransport {
    ep: Endpoints,
    batch: Option<usize>,
    max_payload: usize,
}

impl RawShmTransport {
    /// Builds the backend from the options (`batch` is the decided batch size in bytes).
    pub fn new(opts: &Options, batch: Option<usize>) -> Result<Self, PerftestError> {
        let ep = Endpoints::from_options(opts)?;
        let max_payload = opts.payload_len().max(FINISHED_SIZE + 1);
        if encoded_len(opts.payload_len()) > ferrodds_transport_shm::DEFAULT_SLOT_PAYLOAD {
            return Err(PerftestError::NotAvailable(
                "raw shared memory: -dataLen does not fit one slot",
            ));
        }
        Ok(Self {
            ep,
            batch,
            max_payload,
        })
    }

    /// The segment id (the raw port) of a writer's targets.
    fn target_ids(&self, topic: TopicKind) -> Result<Vec<u16>, PerftestError> {
        Ok(self
            .ep
            .writer_targets(topic)?
            .into_iter()
            .map(|a| a.port())
            .collect())
    }
}

impl Transport for RawShmTransport {
    fn create_writer(&mut self, topic: TopicKind) -> Result<Box<dyn Writer>, PerftestError> {
        let targets = self
            .target_ids(topic)?
            .into_iter()
            .map(|id| Target {
                id,
                sender: None,
                tried: None,
            })
            .collect();
        let batch = if topic == TopicKind::Throughput {
            self.batch
                .map(|b| b.min(ferrodds_transport_shm::DEFAULT_SLOT_PAYLOAD))
        } else {
            None
        };
        Ok(Box::new(BatchingWriter::new(
            ShmSink { targets },
            self.max_payload,
            batch,
        )))
    }

    fn create_reader(&mut self, topic: TopicKind) -> Result<Box<dyn Reader>, PerftestError> {
        let id = self.ep.reader_port(topic)?;
        let receiver = ShmReceiver::create(&ShmConfig::new(id)).map_err(|e| PerftestError::Io {
            context: "creating a shared-memory segment",
            source: std::io::Error::other(e),
        })?;
        Ok(Box::new(RawShmReader {
            receiver,
            buf: Vec::with_capacity(ferrodds_transport_shm::DEFAULT_SLOT_PAYLOAD),
        }))
    }

    fn describe(&self) -> Vec<String> {
        let ids: Vec<String> = self.ep.ports().iter().map(u16::to_string).collect();
        vec![
            "Kind: SHMEM (raw shared-memory rings, no RTPS: one copy per message, a futex wake-up when the reader sleeps)"
                .to_string(),
            "Use Multicast: False".to_string(),
            format!(
                "The following segments will be used: {}",
                ids.iter()
                    .map(|i| {
                        ferrodds_transport_shm::segment_path(
                            std::path::Path::new(ferrodds_transport_shm::DEFAULT_DIR),
                            real_uid(),
                            i.parse().unwrap_or(0),
                        )
                        .display()
                        .to_string()
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ]
    }

    fn reliable(&self) -> bool {
        false
    }

    fn needs_discovery(&self) -> bool {
        false
    }
}

/// A reader's segment, opened when it exists.
struct Target {
    id: u16,
    sender: Option<ShmSender>,
    tried: Option<Instant>,
}

impl Target {
    fn sender(&mut self) -> Option<&ShmSender> {
        if self.sender.is_none() {
            let now = Instant::now();
            if self.tried.is_some_and(|t| now < t + REOPEN_INTERVAL) {
                return None;
            }
            self.tried = Some(now);
            // Not there yet (the reader has not started) or gone: the message is lost.
            self.sender = ShmSender::open(
                std::path::Path::new(ferrodds_transport_shm::DEFAULT_DIR),
                real_uid(),
                self.id,
                0,
            )
            .ok();
        }
        self.sender.as_ref()
    }
}

/// Shared-memory rings: one copy into each target's ring.
struct ShmSink {
    targets: Vec<Target>,
}

impl Sink for ShmSink {
    fn send(&mut self, datagram: &[u8]) -> Result<(), PerftestError> {
        for t in &mut self.targets {
            let Some(s) = t.sender() else { continue };
            match s.send(&[IoSlice::new(datagram)]) {
                // A full ring loses the message, as a full socket buffer would.
                Ok(()) | Err(SendError::Full | SendError::Skipped) => {}
                Err(SendError::Corrupt) => t.sender = None,
                Err(e @ SendError::TooLarge { .. }) => {
                    return Err(PerftestError::Io {
                        context: "sending through shared memory",
                        source: e.into(),
                    });
                }
            }
        }
        Ok(())
    }

    fn targets(&self) -> u32 {
        self.targets.len() as u32
    }
}

struct RawShmReader {
    receiver: ShmReceiver,
    buf: Vec<u8>,
}

impl Reader for RawShmReader {
    fn receive(
        &mut self,
        timeout: Duration,
        f: &mut dyn FnMut(&TestMessage),
    ) -> Result<usize, PerftestError> {
        match self.receiver.recv(&mut self.buf, timeout) {
            // A malformed message is dropped (samples before the bad one were delivered).
            Some(r) => Ok(decode_datagram(&self.buf[..r.len], f).unwrap_or(0)),
            None => Ok(0),
        }
    }

    fn matched(&self) -> u32 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_batching_round_trip() {
        // Domain 201 keeps this away from the e2e tests' segments.
        let opts = Options::parse(&[
            "-pub",
            "-raw",
            "-transport",
            "SHMEM",
            "-domain",
            "201",
            "-dataLen",
            "64",
        ])
        .unwrap();
        let mut pubt = RawShmTransport::new(&opts, Some(300)).unwrap();
        let sopts = Options::parse(&[
            "-sub",
            "-raw",
            "-transport",
            "SHMEM",
            "-domain",
            "201",
            "-dataLen",
            "64",
        ])
        .unwrap();
        let mut subt = RawShmTransport::new(&sopts, None).unwrap();
        let mut reader = subt.create_reader(TopicKind::Throughput).unwrap();
        let mut writer = pubt.create_writer(TopicKind::Throughput).unwrap();
        assert_eq!(writer.matched(), 1);
        let mut m = TestMessage {
            size: 36,
            latency_ping: -1,
            ..TestMessage::default()
        };
        for seq in 0..10 {
            m.seq_num = seq;
            writer.write(&m).unwrap();
        }
        writer.flush().unwrap();
        let mut got = Vec::new();
        let mut messages = 0;
        while got.len() < 10 {
            let n = reader
                .receive(Duration::from_secs(2), &mut |m| got.push(m.seq_num))
                .unwrap();
            assert!(n > 0, "timed out after {} samples", got.len());
            messages += 1;
        }
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        // 68-byte samples, 300-byte batches: 4 per message → 3 messages.
        assert_eq!(messages, 3);
    }
}
