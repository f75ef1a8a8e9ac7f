//! [`ShmTransport`]: the [`Transport`] over segments.

use std::fmt;
use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use ferrodds_transport::{
    AnnouncedLocators, HandlerFactory, MessageMeta, NetworkInterface, TrafficKind, Transport,
    TransportKind, TransportStats,
};

use crate::error::{SendError, ShmError};
use crate::ring::{RxCounters, ShmReceiver, ShmSender, ShmWaker, POLL_INTERVAL};
use crate::segment::{remove_if_same, LivenessProbe};
use crate::ShmConfig;

/// How often a cached peer segment is checked for having been replaced or orphaned.
const PEER_RECHECK: Duration = Duration::from_millis(250);
/// The same check, at most this often, when a peer's ring is full.
const PEER_RECHECK_FULL: Duration = Duration::from_millis(10);

/// A cached peer segment.
#[derive(Debug)]
struct Peer {
    sender: ShmSender,
    /// Checks the segment file and its owner without allocating (`None` for a path that
    /// cannot be a C string: then the peer is re-opened at every check).
    probe: Option<LivenessProbe>,
    /// When it was last checked, in nanoseconds of the coarse monotonic clock.
    checked: AtomicU64,
}

/// The cached peers, sorted by id: a binary search on the send path, where a `HashMap`'s
/// SipHash of the `u16` cost as much as the ring's own work.
#[derive(Debug)]
struct Peers<P = Arc<Peer>>(Vec<(u16, P)>);

impl<P> Default for Peers<P> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<P> Peers<P> {
    /// Where `id` is (`Ok`) or would go (`Err`).
    fn find(&self, id: u16) -> Result<usize, usize> {
        self.0.binary_search_by_key(&id, |(k, _)| *k)
    }

    fn get(&self, id: u16) -> Option<&P> {
        self.find(id).ok().map(|i| &self.0[i].1)
    }

    fn insert(&mut self, id: u16, peer: P) {
        match self.find(id) {
            Ok(i) => self.0[i].1 = peer,
            Err(i) => self.0.insert(i, (id, peer)),
        }
    }

    fn remove(&mut self, id: u16) {
        if let Ok(i) = self.find(id) {
            self.0.remove(i);
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    send_queue_drops: AtomicU64,
    unreachable_drops: AtomicU64,
    sent: AtomicU64,
    received: Arc<AtomicU64>,
}

/// The shared-memory transport of one participant: receives on its own segment, sends into
/// the segments of the peers it is given locators (`127.0.0.1:<id>`) of. See the
/// [crate documentation](crate).
pub struct ShmTransport {
    config: ShmConfig,
    uid: u32,
    interface: NetworkInterface,
    receiver: Mutex<Option<ShmReceiver>>,
    waker: ShmWaker,
    own_file: (PathBuf, u64, u64),
    rx_counters: Arc<RxCounters>,
    counters: Counters,
    peers: Mutex<Peers>,
    shutdown: Arc<AtomicBool>,
}

impl fmt::Debug for ShmTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShmTransport")
            .field("config", &self.config)
            .field("segment", &self.own_file.0)
            .field("shutdown", &self.shutdown.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ShmTransport {
    /// Creates the participant's segment (replacing a stale one of the same id).
    pub fn new(config: ShmConfig) -> Result<Self, ShmError> {
        let receiver = ShmReceiver::create(&config)?;
        let interface = NetworkInterface {
            name: "shm".into(),
            index: 0,
            address: Ipv4Addr::LOCALHOST,
            prefix_len: 8,
            loopback: true,
            multicast: false,
            up: true,
            mtu: u32::try_from(config.slot_payload).ok(),
        };
        Ok(Self {
            uid: crate::real_uid(),
            interface,
            waker: receiver.waker(),
            own_file: receiver.file_id(),
            rx_counters: receiver.counters(),
            receiver: Mutex::new(Some(receiver)),
            counters: Counters::default(),
            peers: Mutex::new(Peers::default()),
            shutdown: Arc::new(AtomicBool::new(false)),
            config,
        })
    }

    /// This participant's segment id (the port of its locator).
    pub fn id(&self) -> u16 {
        self.config.id
    }

    /// The segment file this transport receives on.
    pub fn segment_path(&self) -> &std::path::Path {
        &self.own_file.0
    }

    /// Nanoseconds of the coarse monotonic clock (a resolution of a few milliseconds, for a
    /// fraction of the precise clock's cost): it only spaces the peer checks of the send
    /// path, which runs for every message.
    /// (Through the C library, whose clock reads work under valgrind too: rustix's own
    /// vDSO lookup faults there. Without a coarse clock, the precise one.)
    fn now_nanos(&self) -> u64 {
        use nix::time::{clock_gettime, ClockId};
        clock_gettime(ClockId::CLOCK_MONOTONIC_COARSE)
            .or_else(|_| clock_gettime(ClockId::CLOCK_MONOTONIC))
            .map_or(0, |t| Duration::from(t).as_nanos() as u64)
    }

    fn peers(&self) -> std::sync::MutexGuard<'_, Peers> {
        self.peers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached sender of peer `id`, opened if not cached.
    fn peer(&self, id: u16) -> Result<Arc<Peer>, ShmError> {
        if let Some(p) = self.peers().get(id) {
            return Ok(p.clone());
        }
        // Opened outside the lock (a few system calls); a concurrent open of the same peer
        // is harmless, the last one is cached.
        let sender = ShmSender::open(&self.config.dir, self.uid, id, self.config.id)?;
        let probe = LivenessProbe::new(sender.path(), sender.owner_pid());
        let peer = Arc::new(Peer {
            probe,
            sender,
            checked: AtomicU64::new(self.now_nanos()),
        });
        self.peers().insert(id, peer.clone());
        Ok(peer)
    }

    /// Whether the cached `peer` is still the live segment of `id` (checked at most every
    /// `every`); a peer that is not is dropped from the cache.
    fn still_current(&self, id: u16, peer: &Arc<Peer>, every: Duration) -> bool {
        let now = self.now_nanos();
        let last = peer.checked.load(Ordering::Relaxed);
        if now.saturating_sub(last) < every.as_nanos() as u64 {
            return true;
        }
        peer.checked.store(now, Ordering::Relaxed);
        let (dev, ino) = peer.sender.file_id();
        // No allocation: this runs on the send path (every 10 ms while the ring is full).
        let current = peer.probe.as_ref().is_some_and(|p| p.current(dev, ino));
        if !current {
            let mut peers = self.peers();
            if peers.get(id).is_some_and(|p| Arc::ptr_eq(p, peer)) {
                peers.remove(id);
            }
        }
        current
    }

    fn unreachable(&self, e: ShmError) -> io::Error {
        self.counters
            .unreachable_drops
            .fetch_add(1, Ordering::Relaxed);
        // The kind only (no boxed payload): no allocation per failed send.
        io::Error::from(e.kind())
    }

    fn send_to(&self, id: u16, bufs: &[IoSlice<'_>]) -> io::Result<()> {
        let mut peer = self.peer(id).map_err(|e| self.unreachable(e))?;
        if !self.still_current(id, &peer, PEER_RECHECK) {
            peer = self.peer(id).map_err(|e| self.unreachable(e))?;
        }
        let sent = match peer.sender.send(bufs) {
            Ok(()) => Ok(()),
            Err(SendError::Full) if !self.still_current(id, &peer, PEER_RECHECK_FULL) => {
                // The segment was replaced (or its owner died): retry once on the new one.
                let peer = self.peer(id).map_err(|e| self.unreachable(e))?;
                peer.sender.send(bufs).map_err(|e| self.send_failed(id, e))
            }
            Err(e) => Err(self.send_failed(id, e)),
        };
        if sent.is_ok() {
            self.counters.sent.fetch_add(1, Ordering::Relaxed);
        }
        sent
    }

    fn send_failed(&self, id: u16, e: SendError) -> io::Error {
        match e {
            SendError::Full | SendError::Skipped => {
                self.counters
                    .send_queue_drops
                    .fetch_add(1, Ordering::Relaxed);
            }
            SendError::Corrupt => {
                self.counters
                    .unreachable_drops
                    .fetch_add(1, Ordering::Relaxed);
                self.peers().remove(id);
            }
            SendError::TooLarge { .. } => return e.into(),
        }
        // The kind only (no boxed payload): a full ring must not allocate per send.
        io::Error::from(e.kind())
    }
}

impl Transport for ShmTransport {
    fn kind(&self) -> TransportKind {
        TransportKind::Shm
    }

    fn max_message_size(&self) -> usize {
        self.config.slot_payload
    }

    fn interface(&self) -> &NetworkInterface {
        &self.interface
    }

    /// `default_unicast = [127.0.0.1:<id>]` only: discovery stays on UDP.
    fn locators(&self) -> AnnouncedLocators {
        AnnouncedLocators {
            default_unicast: vec![SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.config.id)],
            ..AnnouncedLocators::default()
        }
    }

    /// Sends into the segment of participant `dst.port()` (the address is not used). Errors:
    /// `NotFound` (no such segment; counted in `unreachable_drops`), `WouldBlock` (its ring is
    /// full; counted in `send_queue_drops`), `InvalidInput` (too large), `InvalidData` (a bad
    /// segment; counted in `unreachable_drops`), `NotConnected` after shutdown.
    fn send(&self, dst: SocketAddrV4, bufs: &[IoSlice<'_>]) -> io::Result<()> {
        if self.shutdown.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "shared-memory transport shut down",
            ));
        }
        self.send_to(dst.port(), bufs)
    }

    fn send_addresses(&self, dst: SocketAddrV4) -> Option<(SocketAddrV4, SocketAddrV4)> {
        Some((
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.config.id),
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, dst.port()),
        ))
    }

    /// One thread, `ferrodds-shm-rx`, with one reusable buffer of the slot payload size.
    /// Fails with `AlreadyExists` when called a second time.
    fn start(&self, handlers: HandlerFactory) -> io::Result<Vec<JoinHandle<()>>> {
        let mut receiver = self
            .receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "shared-memory transport started",
                )
            })?;
        let mut handler = handlers();
        let shutdown = self.shutdown.clone();
        let received = self.counters.received.clone();
        let own = MessageMeta {
            transport: TransportKind::Shm,
            src: SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
            dst: SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.config.id),
            multicast: false,
            traffic: TrafficKind::UserData,
        };
        let thread = std::thread::Builder::new()
            .name("ferrodds-shm-rx".into())
            .spawn(move || {
                let mut buf = Vec::with_capacity(receiver.max_message_size());
                while !shutdown.load(Ordering::Acquire) {
                    if let Some(r) = receiver.recv(&mut buf, POLL_INTERVAL) {
                        let meta = MessageMeta {
                            src: SocketAddrV4::new(Ipv4Addr::LOCALHOST, r.src),
                            ..own
                        };
                        received.fetch_add(1, Ordering::Relaxed);
                        handler.on_message(&buf[..r.len.min(buf.len())], &meta);
                    }
                }
            })?;
        Ok(vec![thread])
    }

    /// Stops the receive thread (it ends within [`POLL_INTERVAL`], at once if it sleeps),
    /// removes the segment file and forgets the peers. Idempotent.
    fn shutdown(&self) {
        if self.shutdown.swap(true, Ordering::AcqRel) {
            return;
        }
        self.waker.wake();
        let (path, dev, ino) = &self.own_file;
        remove_if_same(path, *dev, *ino);
        self.peers().0.clear();
        // A receiver never started is dropped here (its drop removes nothing more).
        self.receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn stats(&self) -> TransportStats {
        TransportStats {
            send_queue_drops: self.counters.send_queue_drops.load(Ordering::Relaxed),
            unreachable_drops: self.counters.unreachable_drops.load(Ordering::Relaxed),
            frame_errors: self.rx_counters.frame_errors.load(Ordering::Relaxed),
            messages_sent: self.counters.sent.load(Ordering::Relaxed),
            messages_received: self.counters.received.load(Ordering::Relaxed),
            ..TransportStats::default()
        }
    }
}

impl Drop for ShmTransport {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_cache_finds_inserts_replaces_and_removes_by_id() {
        let mut peers = Peers::<&str>::default();
        peers.insert(7, "seven");
        peers.insert(3, "three");
        peers.insert(900, "nine hundred");
        assert_eq!(peers.get(3), Some(&"three"));
        assert_eq!(peers.get(7), Some(&"seven"));
        assert_eq!(peers.get(900), Some(&"nine hundred"));
        assert_eq!(peers.get(8), None);
        let ids: Vec<u16> = peers.0.iter().map(|(k, _)| *k).collect();
        assert_eq!(ids, [3, 7, 900]);
        peers.insert(7, "seven again");
        assert_eq!(peers.get(7), Some(&"seven again"));
        assert_eq!(peers.0.len(), 3);
        peers.remove(7);
        peers.remove(8);
        assert_eq!(peers.get(7), None);
        assert_eq!(peers.0.len(), 2);
    }
}
