//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use ferrodds_transport::{
    InterfaceSelector, Received, TrafficKind, UdpConfig, UdpReceiver, UdpTransport,
};

/// Upper bound for any single wait in the tests.
pub const WAIT: Duration = Duration::from_secs(3);

/// A loopback-only, unicast-only configuration.
pub fn lo_config(domain_id: u32) -> UdpConfig {
    UdpConfig {
        interface: InterfaceSelector::Name("lo".into()),
        multicast_enabled: false,
        ..UdpConfig::new(domain_id)
    }
}

/// A receive thread that forwards every datagram (metadata + bytes) until shutdown.
pub struct Collector {
    pub rx: mpsc::Receiver<(Received, Vec<u8>)>,
    pub handle: JoinHandle<std::io::Result<()>>,
}

impl Collector {
    pub fn spawn(mut receiver: UdpReceiver) -> Self {
        let (tx, rx) = mpsc::channel();
        let handle = thread::spawn(move || {
            let mut buf = vec![0u8; ferrodds_transport::MAX_UDP_PAYLOAD];
            while let Some(got) = receiver.recv(&mut buf)? {
                if tx.send((got, buf[..got.len].to_vec())).is_err() {
                    break;
                }
            }
            Ok(())
        });
        Self { rx, handle }
    }

    /// The next datagram, or `None` after `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<(Received, Vec<u8>)> {
        self.rx.recv_timeout(timeout).ok()
    }
}

/// Spawns a collector for the receiver of `kind` / `multicast`.
pub fn collector(t: &UdpTransport, kind: TrafficKind, multicast: bool) -> Collector {
    let r = t
        .receivers()
        .into_iter()
        .find(|r| r.kind() == kind && r.is_multicast() == multicast)
        .expect("receiver exists");
    Collector::spawn(r)
}
