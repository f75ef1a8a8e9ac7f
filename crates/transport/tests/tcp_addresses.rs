//! A TCP peer reached at two of our addresses (its `-peer` entry says 127.0.0.1, the locator we
//! announce says another address) keeps both connections open and delivers everything:
//! before the fix the acceptor closed the older connection each time the other one spoke,
//! and the dialler dialled it again, for ever. Loopback only (127.0.0.1 and 127.0.0.2).

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use ferrodds_transport::{
    InterfaceSelector, MessageHandler, MessageMeta, TcpConfig, TcpTransport, Transport,
};

struct Forward(mpsc::Sender<Vec<u8>>);

impl MessageHandler for Forward {
    fn on_message(&mut self, msg: &[u8], _meta: &MessageMeta) {
        let _ = self.0.send(msg.to_vec());
    }
}

/// An RTPS message of `len` bytes with a MSG_LEN submessage after the header.
fn message(header: &[u8; 20], seq: u32) -> Vec<u8> {
    let mut m = header.to_vec();
    // A PAD-like vendor-neutral body: INFO_TS with a timestamp carrying `seq`.
    m.extend_from_slice(&[0x09, 0x01, 0x08, 0x00]);
    m.extend_from_slice(&seq.to_le_bytes());
    m.extend_from_slice(&[0; 4]);
    m
}

#[test]
fn a_peer_dialling_two_of_our_addresses_keeps_both_connections() {
    let header = |b: u8| {
        let mut h = [b; 20];
        h[..8].copy_from_slice(b"RTPS\x02\x05\x01\x0f");
        h
    };
    // The default interface: the server listens on every address (port chosen by the
    // system); only loopback addresses are dialled.
    let server = TcpTransport::new(&TcpConfig {
        interface: InterfaceSelector::Default,
        port: 0,
        rtps_header: Some(header(1)),
        ..TcpConfig::default()
    })
    .unwrap();
    let port = server.local_addr().port();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let _server_threads = server
        .start(Arc::new(move || {
            Box::new(Forward(tx.lock().unwrap().clone())) as Box<dyn MessageHandler>
        }))
        .unwrap();

    let client = TcpTransport::new(&TcpConfig {
        interface: InterfaceSelector::Address(Ipv4Addr::LOCALHOST),
        port: 0,
        rtps_header: Some(header(2)),
        ..TcpConfig::default()
    })
    .unwrap();
    let _client_threads = client
        .start(Arc::new(|| {
            Box::new(Forward(mpsc::channel().0)) as Box<dyn MessageHandler>
        }))
        .unwrap();

    let addrs = [
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, port),
        SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 2), port),
    ];
    const N: u32 = 200;
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = 0;
    while got < N && Instant::now() < deadline {
        if sent < N {
            let m = message(&header(2), sent);
            // Alternate between the two addresses; an unconnected one drops its first
            // messages while it dials, so resend until everything arrived.
            if client
                .send(addrs[sent as usize % 2], &[IoSlice::new(&m)])
                .is_ok()
            {
                sent += 1;
            }
        }
        while let Ok(_m) = rx.recv_timeout(Duration::from_millis(2)) {
            got += 1;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {
        got += 1;
    }
    let s = server.stats();
    let c = client.stats();
    assert_eq!(s.connections_opened, 2, "server {s:?}, client {c:?}");
    assert_eq!(s.connections_closed, 0, "server {s:?}, client {c:?}");
    assert_eq!(c.connections_opened, 2, "server {s:?}, client {c:?}");
    assert_eq!(c.connections_closed, 0, "server {s:?}, client {c:?}");
    // The hellos are not delivered; everything sent while connected is.
    assert!(
        got + c.unreachable_drops as u32 >= N && got > N / 2,
        "got {got} of {N}: server {s:?}, client {c:?}"
    );
    server.shutdown();
    client.shutdown();
}
