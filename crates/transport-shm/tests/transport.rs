//! Two `ShmTransport`s exchanging messages through the `Transport` trait.

mod common;

use std::io::{ErrorKind, IoSlice};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::TestDir;
use ferrodds_transport::{
    HandlerFactory, MessageHandler, MessageMeta, TrafficKind, Transport, TransportKind,
};
use ferrodds_transport_shm::ShmTransport;

struct Forward(mpsc::Sender<(Vec<u8>, MessageMeta)>);

impl MessageHandler for Forward {
    fn on_message(&mut self, msg: &[u8], meta: &MessageMeta) {
        let _ = self.0.send((msg.to_vec(), *meta));
    }
}

fn handlers() -> (HandlerFactory, mpsc::Receiver<(Vec<u8>, MessageMeta)>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let factory: HandlerFactory =
        Arc::new(move || Box::new(Forward(tx.lock().unwrap().clone())) as Box<dyn MessageHandler>);
    (factory, rx)
}

fn loopback(port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)
}

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn two_transports_exchange_messages() {
    let dir = TestDir::new("pair");
    let a = ShmTransport::new(dir.config(7411, 64, 4096)).unwrap();
    let b = ShmTransport::new(dir.config(7413, 64, 4096)).unwrap();
    assert_eq!(a.kind(), TransportKind::Shm);
    assert_eq!(a.kind().to_string(), "SHMEM");
    assert_eq!(a.max_message_size(), 4096);
    assert_eq!(a.interface().address, Ipv4Addr::LOCALHOST);
    assert_eq!(a.interface().name, "shm");
    let locators = b.locators();
    assert_eq!(locators.default_unicast, [loopback(7413)]);
    assert!(locators.metatraffic_unicast.is_empty());
    assert!(locators.metatraffic_multicast.is_empty());
    assert!(locators.default_multicast.is_empty());

    let (fa, ra) = handlers();
    let (fb, rb) = handlers();
    let ta = a.start(fa).unwrap();
    let tb = b.start(fb).unwrap();
    assert_eq!(ta.len(), 1);
    assert_eq!(tb[0].thread().name(), Some("ferrodds-shm-rx"));
    assert!(a.start(handlers().0).is_err(), "start is called once");

    for i in 0u32..1000 {
        let body = vec![i as u8; (i as usize * 13) % 4000];
        loop {
            match a.send(
                loopback(7413),
                &[
                    IoSlice::new(b"RTPS"),
                    IoSlice::new(&i.to_le_bytes()),
                    IoSlice::new(&body),
                ],
            ) {
                Ok(()) => break,
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
    }
    for i in 0u32..1000 {
        let (msg, meta) = rb.recv_timeout(WAIT).expect("message arrives");
        assert_eq!(&msg[..4], b"RTPS");
        assert_eq!(msg[4..8], i.to_le_bytes());
        assert_eq!(msg.len(), 8 + (i as usize * 13) % 4000);
        assert!(msg[8..].iter().all(|&b| b == i as u8));
        assert_eq!(
            meta,
            MessageMeta {
                transport: TransportKind::Shm,
                src: loopback(7411),
                dst: loopback(7413),
                multicast: false,
                traffic: TrafficKind::UserData,
            }
        );
    }
    b.send(loopback(7411), &[IoSlice::new(b"back")]).unwrap();
    let (msg, meta) = ra.recv_timeout(WAIT).unwrap();
    assert_eq!(msg, b"back");
    assert_eq!(meta.src, loopback(7413));
    assert_eq!(
        a.send_addresses(loopback(7413)),
        Some((loopback(7411), loopback(7413)))
    );

    // Too large, unknown peer.
    let big = vec![0u8; 4097];
    assert_eq!(
        a.send(loopback(7413), &[IoSlice::new(&big)])
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        a.send(loopback(9999), &[IoSlice::new(b"x")])
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(a.stats().unreachable_drops, 1);
    assert_eq!(b.stats().frame_errors, 0);

    // Shutdown: the thread ends promptly, the segment goes, sends fail; idempotent.
    let path = b.segment_path().to_path_buf();
    assert!(path.exists());
    let start = Instant::now();
    b.shutdown();
    for t in tb {
        t.join().unwrap();
    }
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    assert!(!path.exists());
    b.shutdown();
    assert_eq!(
        b.send(loopback(7411), &[IoSlice::new(b"x")])
            .unwrap_err()
            .kind(),
        ErrorKind::NotConnected
    );
    drop(a);
    for t in ta {
        t.join().unwrap();
    }
}

#[test]
fn full_ring_is_would_block_and_counted() {
    let dir = TestDir::new("full");
    let a = ShmTransport::new(dir.config(1, 4, 64)).unwrap();
    let b = ShmTransport::new(dir.config(2, 4, 64)).unwrap(); // never started
    for _ in 0..4 {
        a.send(loopback(2), &[IoSlice::new(b"m")]).unwrap();
    }
    let err = a.send(loopback(2), &[IoSlice::new(b"m")]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WouldBlock);
    assert_eq!(a.stats().send_queue_drops, 1);
    drop(b);
}

#[test]
fn replaced_peer_segment_is_reopened() {
    let dir = TestDir::new("replace");
    let a = ShmTransport::new(dir.config(1, 8, 64)).unwrap();
    let b = ShmTransport::new(dir.config(2, 8, 64)).unwrap();
    a.send(loopback(2), &[IoSlice::new(b"old")]).unwrap();
    drop(b);
    // A new participant with the same id (the old one is gone).
    let b2 = ShmTransport::new(dir.config(2, 8, 64)).unwrap();
    let (f, r) = handlers();
    let t = b2.start(f).unwrap();
    let start = Instant::now();
    loop {
        match a.send(loopback(2), &[IoSlice::new(b"new")]) {
            Ok(()) => {}
            Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock),
        }
        if let Ok((msg, _)) = r.recv_timeout(Duration::from_millis(20)) {
            assert_eq!(msg, b"new");
            break;
        }
        assert!(start.elapsed() < WAIT, "never re-opened");
    }
    // The cached sender is re-checked every 250 ms.
    assert!(start.elapsed() < Duration::from_secs(2));
    b2.shutdown();
    for t in t {
        t.join().unwrap();
    }
}

#[test]
fn removed_peer_is_unreachable() {
    let dir = TestDir::new("gone");
    let a = ShmTransport::new(dir.config(1, 8, 64)).unwrap();
    let b = ShmTransport::new(dir.config(2, 8, 64)).unwrap();
    a.send(loopback(2), &[IoSlice::new(b"m")]).unwrap();
    b.shutdown();
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        match a.send(loopback(2), &[IoSlice::new(b"m")]) {
            Err(e) if e.kind() == ErrorKind::NotFound => break,
            _ => assert!(start.elapsed() < WAIT, "peer still cached"),
        }
    }
    assert!(a.stats().unreachable_drops >= 1);
}
