//! The transport abstraction the runtime drives: every transport (UDPv4, TCPv4, and later TLS
//! and shared memory) sends an RTPS message to an address of its kind and hands received
//! messages to a [`MessageHandler`] from its own threads.

use std::fmt;
use std::io::{self, IoSlice};
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::{NetworkInterface, TrafficKind};

/// What a transport carries RTPS over; each maps to one RTPS locator kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// UDP over IPv4 (locator kind 1).
    Udpv4,
    /// TCP over IPv4 with Cyclone DDS's framing (locator kind 4).
    Tcpv4,
    /// TLS over TCPv4, Cyclone DDS's framing inside the TLS stream (FerroDDS's own locator
    /// kind [`TLSV4_LOCATOR_KIND`]: no other vendor's TLS framing is the same).
    Tlsv4,
    /// Shared memory between participants on the same host and boot (FerroDDS's own locator
    /// kind [`SHM_LOCATOR_KIND`]; the port of its locators is the receiving participant's
    /// segment id).
    Shm,
}

/// The locator kind FerroDDS announces its TLS servers with (vendor-specific range).
pub const TLSV4_LOCATOR_KIND: i32 = 0x0fdd_0004;

/// The locator kind FerroDDS announces its shared-memory segments with (vendor-specific
/// range).
pub const SHM_LOCATOR_KIND: i32 = 0x0fdd_0005;

impl TransportKind {
    /// The RTPS locator kind of this transport's locators.
    pub const fn locator_kind(self) -> i32 {
        match self {
            TransportKind::Udpv4 => 1,
            TransportKind::Tcpv4 => 4,
            TransportKind::Tlsv4 => TLSV4_LOCATOR_KIND,
            TransportKind::Shm => SHM_LOCATOR_KIND,
        }
    }

    /// The transport serving RTPS locator kind `kind`, if any.
    pub const fn from_locator_kind(kind: i32) -> Option<Self> {
        match kind {
            1 => Some(TransportKind::Udpv4),
            4 => Some(TransportKind::Tcpv4),
            TLSV4_LOCATOR_KIND => Some(TransportKind::Tlsv4),
            SHM_LOCATOR_KIND => Some(TransportKind::Shm),
            _ => None,
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportKind::Udpv4 => "UDPv4",
            TransportKind::Tcpv4 => "TCPv4",
            TransportKind::Tlsv4 => "TLSv4",
            TransportKind::Shm => "SHMEM",
        })
    }
}

/// Where a received message came from and how it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageMeta {
    /// The transport it arrived on.
    pub transport: TransportKind,
    /// The sender's address (for TCP the remote end of the connection).
    pub src: SocketAddrV4,
    /// The locator it was sent to, as this transport announces it.
    pub dst: SocketAddrV4,
    /// Whether it arrived on a multicast socket.
    pub multicast: bool,
    /// Discovery or user traffic, by the port it arrived on (a TCP server port carries both:
    /// [`TrafficKind::UserData`]).
    pub traffic: TrafficKind,
}

/// Receives the messages of one transport thread; created per thread by a
/// [`HandlerFactory`], so it can keep scratch state without locking.
pub trait MessageHandler: Send {
    /// One complete RTPS message (for TCP with its `MSG_LEN` submessage), valid only during
    /// the call.
    fn on_message(&mut self, msg: &[u8], meta: &MessageMeta);
}

/// Makes one [`MessageHandler`] per receiving thread.
pub type HandlerFactory = Arc<dyn Fn() -> Box<dyn MessageHandler> + Send + Sync>;

/// The unicast and multicast addresses a transport announces (as locators of its kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnnouncedLocators {
    /// Discovery traffic, unicast.
    pub metatraffic_unicast: Vec<SocketAddrV4>,
    /// Discovery traffic, multicast.
    pub metatraffic_multicast: Vec<SocketAddrV4>,
    /// User data, unicast.
    pub default_unicast: Vec<SocketAddrV4>,
    /// User data, multicast.
    pub default_multicast: Vec<SocketAddrV4>,
}

/// Counters a transport keeps (all zero where they do not apply).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Connections opened (dialled or accepted).
    pub connections_opened: u64,
    /// Connections closed (by either side, or on error).
    pub connections_closed: u64,
    /// Incoming connections refused because the limit was reached.
    pub connections_refused: u64,
    /// Connections closed for a malformed, oversized or truncated frame.
    pub frame_errors: u64,
    /// Messages not sent because a connection's send queue was full.
    pub send_queue_drops: u64,
    /// Messages not sent because no connection to the destination could be made (yet).
    pub unreachable_drops: u64,
    /// Secure (TLS) handshakes that failed: the peer was refused, or it refused us.
    pub handshake_failures: u64,
    /// Secure handshakes that resumed an earlier session instead of a full handshake.
    pub resumed_sessions: u64,
    /// Datagrams the kernel dropped because one of the transport's receive sockets had its
    /// buffer (`SO_RCVBUF`) full (UDP, Linux: the socket's `drops` in `/proc/net/udp`; 0
    /// where that is not available).
    pub receive_buffer_drops: u64,
    /// Messages sent and messages received (counted by the shared-memory transport; 0 for
    /// the socket transports, whose traffic the kernel counts).
    pub messages_sent: u64,
    /// See [`TransportStats::messages_sent`].
    pub messages_received: u64,
}

/// A transport: sends RTPS messages to addresses of its kind and delivers received ones to
/// handlers from its own threads (which is how it wakes the runtime: no hand-off between
/// threads per message).
///
/// Implementations are `Send + Sync`; [`Transport::send`] takes `&self`, may be called from
/// several threads at once, and must not block for long (the runtime calls it with its
/// engine lock held): a transport that can block (a stream) queues, bounded, and drops what
/// does not fit, counted in [`TransportStats::send_queue_drops`]; reliable writers repair
/// such drops like datagram loss.
pub trait Transport: Send + Sync + fmt::Debug {
    /// The kind of locators this transport serves.
    fn kind(&self) -> TransportKind;
    /// The largest message [`Transport::send`] accepts, in bytes.
    fn max_message_size(&self) -> usize;
    /// The interface it sends and receives on.
    fn interface(&self) -> &NetworkInterface;
    /// What it announces in discovery.
    fn locators(&self) -> AnnouncedLocators;
    /// Sends one message (the concatenation of `bufs`) to `dst`.
    fn send(&self, dst: SocketAddrV4, bufs: &[IoSlice<'_>]) -> io::Result<()>;
    /// The addresses a message sent to `dst` really travels between: the source address
    /// and port it leaves from, and the address and port it arrives at (for a stream, the
    /// ends of the connection serving `dst`). `None` when not known (no connection yet).
    /// For captures; not called on the data path otherwise.
    fn send_addresses(&self, dst: SocketAddrV4) -> Option<(SocketAddrV4, SocketAddrV4)> {
        let _ = dst;
        None
    }
    /// Starts the receiving threads, each calling a handler made by `handlers`. Called once.
    fn start(&self, handlers: HandlerFactory) -> io::Result<Vec<JoinHandle<()>>>;
    /// Stops sending and receiving; the threads started end soon after (UDP within 100 ms).
    /// Idempotent.
    fn shutdown(&self);
    /// The transport's counters.
    fn stats(&self) -> TransportStats {
        TransportStats::default()
    }
    /// The last secure-handshake errors ("PEER: reason", oldest first); empty without TLS.
    fn security_errors(&self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locator_kinds_map_both_ways() {
        for kind in [
            TransportKind::Udpv4,
            TransportKind::Tcpv4,
            TransportKind::Tlsv4,
            TransportKind::Shm,
        ] {
            assert_eq!(
                TransportKind::from_locator_kind(kind.locator_kind()),
                Some(kind)
            );
        }
        assert_eq!(TransportKind::Shm.locator_kind(), SHM_LOCATOR_KIND);
        assert_eq!(SHM_LOCATOR_KIND, 0x0fdd_0005);
        assert_eq!(TransportKind::Shm.to_string(), "SHMEM");
        assert_eq!(TransportKind::from_locator_kind(2), None);
    }
}
