//! What the TCP transport needs from a secure channel (TLS): a handshake on a fresh
//! connection, then sealing outgoing bytes and opening incoming ones. The TLS implementation
//! lives in its own crate (`ferrodds-transport-tls`, rustls); the TCP transport keeps the
//! connection model (one server port, dialling, hello, tie-break, queues) and runs every byte
//! of a connection through the channel when one is configured.

use std::fmt;
use std::io::{self, IoSlice};
use std::net::{SocketAddrV4, TcpStream};
use std::sync::Arc;

/// Makes the secure channel of each connection.
pub trait StreamSecurity: Send + Sync + fmt::Debug {
    /// Runs the client side of the handshake on a connection just dialled to `server`
    /// (blocking; the stream has read and write timeouts). `Err` names why the peer was not
    /// accepted, or why it refused us.
    fn connect(
        &self,
        stream: &mut TcpStream,
        server: SocketAddrV4,
    ) -> io::Result<Box<dyn SecureChannel>>;
    /// Runs the server side of the handshake on a connection accepted from `peer`.
    fn accept(
        &self,
        stream: &mut TcpStream,
        peer: SocketAddrV4,
    ) -> io::Result<Box<dyn SecureChannel>>;
}

/// One connection's secure channel after the handshake.
pub trait SecureChannel: Send {
    /// Encrypts `plain` (in order) and appends what goes on the wire to `out`.
    fn seal(&mut self, plain: &[IoSlice<'_>], out: &mut Vec<u8>) -> io::Result<()>;
    /// Decrypts `wire` (bytes as read from the socket, any split), appending the plaintext to
    /// `plain` and what must be sent back (alerts, key updates) to `reply`.
    fn open(&mut self, wire: &[u8], plain: &mut Vec<u8>, reply: &mut Vec<u8>) -> io::Result<()>;
    /// Whether the handshake resumed an earlier session.
    fn resumed(&self) -> bool {
        false
    }
}

/// A [`StreamSecurity`] in a configuration value (equal when it is the same instance).
#[derive(Clone, Debug)]
pub struct SecurityHandle(pub Arc<dyn StreamSecurity>);

impl PartialEq for SecurityHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SecurityHandle {}
