//! Optional pcapng tap at the transport boundary ([`crate::Config::capture_file`]).
//!
//! Every datagram the participant sends or receives is recorded with its direction, real
//! ports and addresses and the time it crossed the tap, in synthetic Ethernet/IPv4/UDP
//! framing (see `ferrodds-capture`). The tap copies the datagram into a bounded queue and a
//! writer thread does the file I/O, so sending and receiving never wait for the disk; when
//! the queue is full the datagram is not recorded and counted as dropped (logged at
//! shutdown).

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddrV4;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::SystemTime;

use ferrodds_capture::{CaptureWriter, Direction};

use crate::error::DdsError;
use crate::sync::lock;

/// Datagrams queued for the writer thread at most.
const QUEUE: usize = 8192;

enum Record {
    Datagram {
        ts: SystemTime,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        dir: Direction,
        bytes: Vec<u8>,
    },
    Stop,
}

pub(crate) struct CaptureTap {
    tx: SyncSender<Record>,
    thread: Mutex<Option<JoinHandle<()>>>,
    dropped: AtomicU64,
}

impl CaptureTap {
    pub(crate) fn create(path: &Path, iface_name: &str) -> Result<Self, DdsError> {
        let file = File::create(path)?;
        let mut writer = CaptureWriter::new(BufWriter::new(file))?;
        let iface = writer.add_interface(iface_name)?;
        let (tx, rx) = sync_channel::<Record>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("ferrodds-capture".into())
            .spawn(move || {
                while let Ok(r) = rx.recv() {
                    match r {
                        Record::Datagram {
                            ts,
                            src,
                            dst,
                            dir,
                            bytes,
                        } => {
                            if let Err(e) = writer.write_udp(iface, ts, src, dst, &bytes, dir, None)
                            {
                                tracing::debug!(error = %e, "capture write failed");
                            }
                        }
                        Record::Stop => break,
                    }
                }
                if let Err(e) = writer.flush() {
                    tracing::warn!(error = %e, "capture flush failed");
                }
            })?;
        Ok(Self {
            tx,
            thread: Mutex::new(Some(thread)),
            dropped: AtomicU64::new(0),
        })
    }

    fn record(&self, src: SocketAddrV4, dst: SocketAddrV4, bytes: &[u8], dir: Direction) {
        let r = Record::Datagram {
            ts: SystemTime::now(),
            src,
            dst,
            dir,
            bytes: bytes.to_vec(),
        };
        match self.tx.try_send(r) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn outbound(&self, src: SocketAddrV4, dst: SocketAddrV4, bytes: &[u8]) {
        self.record(src, dst, bytes, Direction::Outbound);
    }

    pub(crate) fn inbound(&self, src: SocketAddrV4, dst: SocketAddrV4, bytes: &[u8]) {
        self.record(src, dst, bytes, Direction::Inbound);
    }

    /// Writes out everything queued so far and stops the writer thread.
    pub(crate) fn finish(&self) {
        let Some(t) = lock(&self.thread).take() else {
            return;
        };
        // Blocking send: the queue drains as the thread writes.
        let _ = self.tx.send(Record::Stop);
        if t.join().is_err() {
            tracing::warn!("capture writer thread panicked");
        }
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(dropped, "capture queue overflowed; datagrams not recorded");
        }
    }
}

impl Drop for CaptureTap {
    fn drop(&mut self) {
        self.finish();
    }
}
