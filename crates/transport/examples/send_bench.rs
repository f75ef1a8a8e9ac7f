//! Send + receive of one small datagram over loopback, unconnected vs connected send sockets.
//!
//! `cargo run --release -p ferrodds-transport --example send_bench [rounds] [reps] [bytes] [only]`
//!
//! Two senders (`UdpConfig::connected_send_sockets` 0 and the default) send to the same
//! receiver; each timed batch is `rounds` send + receive pairs on one thread (loopback delivers
//! during the send, so the receive finds the datagram queued). Batches of the two variants
//! alternate `reps` times so that machine noise hits both alike; the report gives the median,
//! minimum and maximum nanoseconds per pair. Pin it to one CPU (`taskset -c 1`) for steadier
//! figures. With `only` (`unconnected` or `connected`) just that variant runs, for profiling
//! (`perf record`).

use std::io::IoSlice;
use std::time::Instant;

use ferrodds_transport::{
    InterfaceSelector, TrafficKind, UdpConfig, UdpTransport, DEFAULT_CONNECTED_SEND_SOCKETS,
    MAX_UDP_PAYLOAD,
};

fn arg(n: usize, default: usize) -> Result<usize, Box<dyn std::error::Error>> {
    Ok(std::env::args()
        .nth(n)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(default))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds = arg(1, 20_000)?;
    let reps = arg(2, 15)?;
    let bytes = arg(3, 64)?;
    let only = std::env::args().nth(4);

    let config = |connected| UdpConfig {
        interface: InterfaceSelector::Name("lo".into()),
        multicast_enabled: false,
        connected_send_sockets: connected,
        ..UdpConfig::new(232)
    };
    let receiver = UdpTransport::new(&config(0))?;
    let senders = [
        ("unconnected", UdpTransport::new(&config(0))?),
        (
            "connected",
            UdpTransport::new(&config(DEFAULT_CONNECTED_SEND_SOCKETS))?,
        ),
    ];
    let mut rx = receiver
        .receivers()
        .into_iter()
        .find(|r| r.kind() == TrafficKind::UserData)
        .ok_or("no user-data receiver")?;
    let dst = receiver.default_unicast_locators()[0].socket_addr();
    let payload = vec![0x5au8; bytes];
    let mut buf = vec![0u8; MAX_UDP_PAYLOAD];

    let mut samples: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for rep in 0..=reps {
        for (i, (name, sender)) in senders.iter().enumerate() {
            if only.as_deref().is_some_and(|o| o != *name) {
                continue;
            }
            let start = Instant::now();
            for _ in 0..rounds {
                sender.send(dst, &[IoSlice::new(&payload)])?;
                rx.recv(&mut buf)?.ok_or("shut down")?;
            }
            let ns = start.elapsed().as_nanos() as f64 / rounds as f64;
            // Repetition 0 warms up (and creates the connected socket).
            if rep > 0 {
                samples[i].push(ns);
            }
        }
    }
    println!("{rounds} send+recv of {bytes} B per batch, {reps} interleaved batches each");
    for ((name, _), s) in senders.iter().zip(samples.iter_mut()) {
        if s.is_empty() {
            continue;
        }
        s.sort_by(f64::total_cmp);
        println!(
            "{name:>12}: median {:7.0} ns  min {:7.0}  max {:7.0}",
            s[s.len() / 2],
            s[0],
            s[s.len() - 1]
        );
    }
    Ok(())
}
