//! Two UDPv4 transports on loopback exchange datagrams: A pings B, B echoes back.
//!
//! `cargo run -p ferrodds-transport --example ping [count]`

use std::io::IoSlice;
use std::thread;
use std::time::Instant;

use ferrodds_transport::{
    InterfaceSelector, TrafficKind, UdpConfig, UdpTransport, MAX_UDP_PAYLOAD,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(5);

    let mut config = UdpConfig::new(230);
    config.interface = InterfaceSelector::Name("lo".into());
    config.multicast_enabled = false;
    let a = UdpTransport::new(&config)?;
    let b = UdpTransport::new(&config)?;
    println!(
        "A: participant {} at {}; B: participant {} at {}",
        a.participant_id(),
        a.default_unicast_locators()[0],
        b.participant_id(),
        b.default_unicast_locators()[0]
    );

    let user = |t: &UdpTransport| {
        t.receivers()
            .into_iter()
            .find(|r| r.kind() == TrafficKind::UserData)
            .ok_or("no user-data receiver")
    };
    let mut a_rx = user(&a)?;
    let mut b_rx = user(&b)?;
    let a_addr = a.default_unicast_locators()[0].socket_addr();

    // B's receive thread echoes every datagram to A until B shuts down.
    let b = std::sync::Arc::new(b);
    let b_echo = std::sync::Arc::clone(&b);
    let echo = thread::spawn(move || {
        let mut buf = vec![0u8; MAX_UDP_PAYLOAD];
        while let Ok(Some(got)) = b_rx.recv(&mut buf) {
            let _ = b_echo.send(a_addr, &[IoSlice::new(&buf[..got.len])]);
        }
    });

    let dst = b.default_unicast_locators()[0].socket_addr();
    let mut buf = vec![0u8; MAX_UDP_PAYLOAD];
    for seq in 0..count {
        let start = Instant::now();
        let seq_bytes = seq.to_le_bytes();
        a.send(dst, &[IoSlice::new(b"ping "), IoSlice::new(&seq_bytes)])?;
        let got = a_rx.recv(&mut buf)?.ok_or("transport shut down")?;
        println!(
            "seq {seq}: {} bytes back from {} in {:?}",
            got.len,
            got.src,
            start.elapsed()
        );
    }
    b.shutdown();
    echo.join().map_err(|_| "echo thread panicked")?;
    Ok(())
}
