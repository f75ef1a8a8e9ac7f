//! A bounded cache of connected UDP send sockets, one per unicast destination.
//!
//! # Why
//!
//! `sendmsg` on an unconnected socket makes the kernel resolve the route for every datagram
//! and, because the socket has no fixed peer, pick the IPv4 identification field from the
//! shared, hashed `ip_idents` table (`__ip_select_ident`: with the default
//! `IP_PMTUDISC_WANT` the datagram may still be fragmented locally, so it needs a real ID even
//! though DF is set on datagrams that fit the path MTU). A socket `connect`ed to its
//! destination keeps the route in the socket and numbers its datagrams from a per-socket
//! counter, so each send does less work in the kernel (0.1–0.4 µs less per send + receive of
//! a 32 B datagram on loopback, `examples/send_bench.rs` on a noisy 2-vCPU VM; user space
//! executes about as many instructions as before). Nothing changes on the wire apart from the
//! IP identification values: DF is set (on datagrams that fit the path MTU) either way, and
//! larger datagrams are still fragmented by IP.
//!
//! # How
//!
//! Every cached socket is bound, like the transport's unconnected send socket, to
//! `0.0.0.0:<source port>` (both carry `SO_REUSEADDR`), so datagrams keep one UDP source port
//! whichever socket sends them, and gets the same `SO_SNDBUF`. Sockets are created lazily on
//! the first send to a destination and kept in a small table (a `Vec` allocated once, with
//! room for all entries) behind an [`RwLock`]: the steady-state send takes the read lock,
//! checks the most recently used entry first (or else scans the few entries and stamps the
//! one found as the most recent) and sends (`send`, or `sendmsg` for several buffers) while
//! holding the read lock, so concurrent senders never wait for each other. Only inserting or
//! dropping a destination takes the write lock. When the table is full, the least recently used entry is replaced, at most once
//! per [`REPLACE_INTERVAL`] (so a working set larger than the table cannot make every send
//! create and close a socket); meanwhile, and after a socket could not be created (then for
//! [`RETRY_AFTER_FAILURE`]), destinations without an entry use the unconnected socket, as
//! before.
//!
//! # Asynchronous errors
//!
//! A connected UDP socket receives the ICMP errors its datagrams provoke (port unreachable
//! when the peer's socket is closed, host unreachable, ...) and the kernel reports such an
//! error, once, as the failure of the *next* send on that socket, which is then not sent. An
//! unconnected socket never reports them. To keep that behaviour, a failed send on a connected
//! socket is retried once: the failure consumed the pending error, so the retry sends the
//! datagram (or reports an error of its own). A send that fails twice removes the entry (a
//! later send creates a fresh socket, with a fresh route and source address), so no
//! destination ever becomes unusable.

use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Default number of cached connected sockets per transport (see
/// [`crate::UdpConfig::connected_send_sockets`]).
pub const DEFAULT_CONNECTED_SEND_SOCKETS: usize = 32;

/// Largest accepted [`crate::UdpConfig::connected_send_sockets`]; larger values are clamped.
pub const MAX_CONNECTED_SEND_SOCKETS: usize = 1024;

/// Shortest time between two replacements of an entry of a full table.
pub(crate) const REPLACE_INTERVAL: Duration = Duration::from_millis(50);

/// How long destinations without an entry keep using the unconnected socket after a connected
/// socket could not be created (out of file descriptors, `connect` refused, ...).
pub(crate) const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Receive buffer requested for the cached sockets: nothing ever reads them (datagrams a peer
/// sends to our source port, which RTPS does not do, would only pile up there), so ask for
/// the kernel's minimum instead of the default of about 200 KiB per socket.
const UNUSED_RECV_BUFFER: usize = 1;

#[derive(Debug)]
struct Entry {
    /// The destination, as [`key`] packs it.
    key: u64,
    socket: Socket,
    /// Value of [`ConnectedSockets::clock`] when this entry last became the most recently
    /// used one (see [`ConnectedSockets::send_cached`]).
    last_used: AtomicU64,
}

/// `dst` packed into one integer (address and port), for cheap comparisons.
fn key(dst: SocketAddrV4) -> u64 {
    (u64::from(u32::from(*dst.ip())) << 16) | u64::from(dst.port())
}

/// The cache; owned by [`crate::UdpTransport`].
#[derive(Debug)]
pub(crate) struct ConnectedSockets {
    entries: RwLock<Vec<Entry>>,
    capacity: usize,
    /// Index of the most recently used entry: looked at first, and the only entry whose
    /// `last_used` may be stale (it is the newest by definition).
    recent: AtomicUsize,
    /// Logical clock, ticked whenever another entry becomes the most recently used one.
    clock: AtomicU64,
    /// Origin of [`Self::hold_until_ns`].
    epoch: Instant,
    /// Before this time (nanoseconds since `epoch`) no socket is created for a destination
    /// that has none: set after a replacement and after a failure.
    hold_until_ns: AtomicU64,
    source_port: u16,
    send_buffer: Option<usize>,
}

/// Whether datagrams to `dst` may use a connected socket: unicast addresses only (multicast
/// keeps the unconnected socket with its multicast options; broadcast and the unspecified
/// address, as well as port 0, keep the unconnected socket's errors and semantics).
fn connectable(dst: SocketAddrV4) -> bool {
    let ip = dst.ip();
    !ip.is_multicast() && !ip.is_broadcast() && !ip.is_unspecified() && dst.port() != 0
}

/// Sends one datagram on a connected socket: `send` for a single buffer (the common case;
/// less work than `sendmsg`, here and in the kernel), `sendmsg` otherwise.
#[inline]
fn send_on(socket: &Socket, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    match bufs {
        [one] => socket.send(one),
        _ => socket.send_vectored(bufs),
    }
}

impl ConnectedSockets {
    /// A cache of up to `capacity` sockets bound to `0.0.0.0:source_port` with `SO_SNDBUF`
    /// `send_buffer` (the system default for `None`). `capacity` 0 disables it; it is
    /// clamped to [`MAX_CONNECTED_SEND_SOCKETS`].
    pub(crate) fn new(capacity: usize, source_port: u16, send_buffer: Option<usize>) -> Self {
        let capacity = capacity.min(MAX_CONNECTED_SEND_SOCKETS);
        Self {
            entries: RwLock::new(Vec::with_capacity(capacity)),
            capacity,
            recent: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            epoch: Instant::now(),
            hold_until_ns: AtomicU64::new(0),
            source_port,
            send_buffer,
        }
    }

    /// Sends one datagram to `dst` on its connected socket, creating it if needed and
    /// allowed; returns `None` when the caller must use the unconnected socket.
    #[inline]
    pub(crate) fn send(
        &self,
        dst: SocketAddrV4,
        bufs: &[IoSlice<'_>],
    ) -> Option<io::Result<usize>> {
        let key = key(dst);
        // Only connectable destinations are ever inserted, so a hit needs no checks.
        match self.send_cached(key, bufs) {
            Ok(result) => Some(result),
            Err(full) => self.send_new(dst, key, full, bufs),
        }
    }

    /// The slow path of [`send`](Self::send): the first datagram to `dst`, or one that
    /// found the table `full`.
    #[cold]
    #[inline(never)]
    fn send_new(
        &self,
        dst: SocketAddrV4,
        key: u64,
        full: bool,
        bufs: &[IoSlice<'_>],
    ) -> Option<io::Result<usize>> {
        if self.capacity == 0 || !connectable(dst) {
            return None;
        }
        let now = self.now_ns();
        if now < self.hold_until_ns.load(Ordering::Relaxed) {
            return None;
        }
        let socket = match self.connect(dst) {
            Ok(socket) => socket,
            Err(_) => {
                self.hold(now, RETRY_AFTER_FAILURE);
                return None;
            }
        };
        if full {
            self.hold(now, REPLACE_INTERVAL);
        }
        let evicted = self.insert(key, socket);
        // Close the evicted socket (or ours, when another thread inserted first) outside
        // the lock.
        drop(evicted);
        // `None` if other threads evicted it again at once (rare): send unconnected.
        self.send_cached(key, bufs).ok()
    }

    /// Sends on the cached socket of `key`, if there is one; otherwise returns whether the
    /// table is full.
    ///
    /// The steady state is one destination sent to again and again (or a few, in turns), so
    /// the most recently used entry is checked first and a hit on it writes nothing shared.
    #[inline]
    fn send_cached(&self, key: u64, bufs: &[IoSlice<'_>]) -> Result<io::Result<usize>, bool> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        let entry = match entries.get(self.recent.load(Ordering::Relaxed)) {
            Some(e) if e.key == key => e,
            _ => match self.find(&entries, key) {
                Some(e) => e,
                None => return Err(entries.len() >= self.capacity),
            },
        };
        match send_on(&entry.socket, bufs) {
            Ok(n) => Ok(Ok(n)),
            Err(_) => Ok(self.resend(entries, key, bufs)),
        }
    }

    /// Looks `key` up in `entries` and makes it the most recently used entry, stamped with
    /// a new clock value (the stamps thus order the entries by their last use, for
    /// eviction).
    #[inline(never)]
    fn find<'a>(&self, entries: &'a [Entry], key: u64) -> Option<&'a Entry> {
        let i = entries.iter().position(|e| e.key == key)?;
        let tick = self.clock.fetch_add(1, Ordering::Relaxed);
        entries[i].last_used.store(tick, Ordering::Relaxed);
        self.recent.store(i, Ordering::Relaxed);
        Some(&entries[i])
    }

    /// A send on the socket of `key` failed, most likely with an ICMP error provoked by an
    /// earlier datagram, reported now and cleared by that failure: sends again (see the
    /// module documentation), and drops the entry if that fails too.
    #[cold]
    #[inline(never)]
    fn resend(
        &self,
        entries: RwLockReadGuard<'_, Vec<Entry>>,
        key: u64,
        bufs: &[IoSlice<'_>],
    ) -> io::Result<usize> {
        let entry = entries.iter().find(|e| e.key == key);
        let result = entry.map_or(Err(io::ErrorKind::NotFound.into()), |e| {
            send_on(&e.socket, bufs)
        });
        if result.is_err() {
            drop(entries);
            self.remove(key);
        }
        result
    }

    /// A new socket connected to `dst`, sharing the transport's source port.
    fn connect(&self, dst: SocketAddrV4) -> io::Result<Socket> {
        let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        socket.set_reuse_address(true)?;
        if let Some(n) = self.send_buffer {
            socket.set_send_buffer_size(n)?;
        }
        // Only an optimisation: a failure here is harmless.
        let _ = socket.set_recv_buffer_size(UNUSED_RECV_BUFFER);
        socket.bind(&SockAddr::from(SocketAddrV4::new(
            Ipv4Addr::UNSPECIFIED,
            self.source_port,
        )))?;
        socket.connect(&SockAddr::from(dst))?;
        Ok(socket)
    }

    /// Adds `socket` for `key` as the most recently used entry, replacing the least recently
    /// used one when the table is full; returns the socket to close (the replaced one, or
    /// `socket` itself when another thread added `key` meanwhile).
    fn insert(&self, key: u64, socket: Socket) -> Option<Socket> {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        if entries.iter().any(|e| e.key == key) {
            return Some(socket);
        }
        let entry = Entry {
            key,
            socket,
            last_used: AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed)),
        };
        if entries.len() < self.capacity {
            // Within the capacity reserved at construction: no allocation.
            entries.push(entry);
            self.recent.store(entries.len() - 1, Ordering::Relaxed);
            return None;
        }
        let lru = entries
            .iter()
            .enumerate()
            .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
            .map(|(i, _)| i)?;
        self.recent.store(lru, Ordering::Relaxed);
        Some(std::mem::replace(&mut entries[lru], entry).socket)
    }

    /// Drops the entry of `key`, if any.
    fn remove(&self, key: u64) {
        let removed = {
            let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
            entries
                .iter()
                .position(|e| e.key == key)
                .map(|i| entries.swap_remove(i))
        };
        drop(removed);
    }

    /// Creates no socket for new destinations for `pause` from `now`.
    fn hold(&self, now: u64, pause: Duration) {
        let until = now.saturating_add(u64::try_from(pause.as_nanos()).unwrap_or(u64::MAX));
        self.hold_until_ns.fetch_max(until, Ordering::Relaxed);
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The destinations that currently have a connected socket (for tests).
    #[cfg(test)]
    pub(crate) fn destinations(&self) -> Vec<SocketAddrV4> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries
            .iter()
            .map(|e| SocketAddrV4::new(((e.key >> 16) as u32).into(), e.key as u16))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unicast_destinations_are_connected() {
        let c = |ip: [u8; 4], port| connectable(SocketAddrV4::new(ip.into(), port));
        assert!(c([127, 0, 0, 1], 7411));
        assert!(c([192, 168, 1, 20], 7411));
        assert!(!c([239, 255, 0, 1], 7401));
        assert!(!c([255, 255, 255, 255], 7400));
        assert!(!c([0, 0, 0, 0], 7400));
        assert!(!c([127, 0, 0, 1], 0));
    }

    #[test]
    fn capacity_is_clamped() {
        let cache = ConnectedSockets::new(usize::MAX, 40000, None);
        assert_eq!(cache.capacity, MAX_CONNECTED_SEND_SOCKETS);
    }

    #[test]
    fn disabled_cache_declines_everything() {
        let cache = ConnectedSockets::new(0, 40000, None);
        let dst = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9);
        assert!(cache.send(dst, &[IoSlice::new(b"x")]).is_none());
        assert!(cache.destinations().is_empty());
    }
}
