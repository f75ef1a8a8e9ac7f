//! `spdp-flood`: announces many fake participants to SPDP ports, as a hostile or broken host
//! on the network would, to test that a participant's user data keeps flowing (issue 18).
//!
//! Each fake participant is a real SPDP announcement (made by the sans-IO engine) with its GUID
//! prefix replaced by a distinct one; its metatraffic and user locators are 127.0.0.1 with a
//! port nobody listens on (`--bogus-port`), so whatever a victim sends to them stays on
//! loopback and is refused there. Only loopback targets are accepted.
//!
//! ```text
//! spdp-flood --target 127.0.0.1:7410 --target 127.0.0.1:7412 --count 50000 --seconds 10
//! ```
//! Prints `SENT <datagrams> <participants>` at the end.
#![forbid(unsafe_code)]

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ferrodds_rtps::{GuidPrefix, Locator, Participant, ParticipantConfig, Timestamp};

struct Args {
    targets: Vec<SocketAddrV4>,
    count: u32,
    seconds: f64,
    bogus_port: u16,
    domain: u32,
}

fn usage() -> &'static str {
    "usage: spdp-flood --target 127.0.0.1:PORT [--target ...] [--count N (50000)] \
     [--seconds S (10)] [--bogus-port P (9)] [--domain D (0)]"
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        targets: Vec::new(),
        count: 50_000,
        seconds: 10.0,
        bogus_port: 9,
        domain: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || {
            it.next()
                .ok_or_else(|| format!("{k} needs a value\n{}", usage()))
        };
        match k.as_str() {
            "--target" => {
                let s = v()?;
                let t: SocketAddrV4 = s.parse().map_err(|e| format!("--target {s}: {e}"))?;
                if !t.ip().is_loopback() {
                    return Err(format!("--target {t}: only loopback targets are allowed"));
                }
                a.targets.push(t);
            }
            "--count" => a.count = v()?.parse().map_err(|e| format!("--count: {e}"))?,
            "--seconds" => {
                a.seconds = v()?.parse().map_err(|e| format!("--seconds: {e}"))?;
                if !(a.seconds.is_finite() && a.seconds > 0.0) {
                    return Err("--seconds must be a positive number".into());
                }
            }
            "--bogus-port" => {
                a.bogus_port = v()?.parse().map_err(|e| format!("--bogus-port: {e}"))?
            }
            "--domain" => a.domain = v()?.parse().map_err(|e| format!("--domain: {e}"))?,
            "-h" | "--help" => return Err(usage().into()),
            _ => return Err(format!("unknown option {k}\n{}", usage())),
        }
    }
    if a.targets.is_empty() {
        return Err(format!("no --target\n{}", usage()));
    }
    Ok(a)
}

/// One SPDP announcement of a participant with `template` as its GUID prefix.
fn template(domain: u32, prefix: GuidPrefix, bogus_port: u16) -> Vec<u8> {
    let bogus = Locator::udpv4(Ipv4Addr::LOCALHOST, bogus_port);
    let cfg = ParticipantConfig {
        domain_id: domain,
        guid_prefix: prefix,
        metatraffic_unicast_locators: vec![bogus],
        default_unicast_locators: vec![bogus],
        spdp_destinations: vec![bogus],
        ..ParticipantConfig::default()
    };
    let mut p = Participant::new(cfg, Timestamp(0));
    let mut buf = vec![0u8; 65_536];
    for ms in 0..100u64 {
        let now = Timestamp(ms * 1_000_000);
        if p.poll_timeout().is_some_and(|t| t <= now) {
            p.handle_timeout(now);
        }
        if let Some(t) = p.poll_transmit(now, &mut buf) {
            return buf[..t.len].to_vec();
        }
    }
    Vec::new()
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("spdp-flood: {e}");
            return ExitCode::from(2);
        }
    };
    // A recognisable prefix whose last 4 bytes are replaced per fake participant.
    let base = GuidPrefix([0x01, 0xfd, 0xf1, 0x00, 0xd0, 0x0d, 0xf1, 0x00, 0, 0, 0, 0]);
    let tpl = template(args.domain, base, args.bogus_port);
    let spots: Vec<usize> = tpl
        .windows(12)
        .enumerate()
        .filter(|(_, w)| *w == base.0)
        .map(|(i, _)| i)
        .collect();
    if tpl.is_empty() || spots.is_empty() {
        eprintln!("spdp-flood: could not make an SPDP announcement");
        return ExitCode::FAILURE;
    }
    let sock = match UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("spdp-flood: bind: {e}");
            return ExitCode::FAILURE;
        }
    };
    let start = Instant::now();
    let per = Duration::from_secs_f64(args.seconds / f64::from(args.count.max(1)));
    let mut msg = tpl.clone();
    let mut sent = 0u64;
    for i in 0..args.count {
        for &s in &spots {
            msg[s + 8..s + 12].copy_from_slice(&(i + 1).to_be_bytes());
        }
        for t in &args.targets {
            // (A refused datagram is what a flood expects; keep going.)
            if sock.send_to(&msg, t).is_ok() {
                sent += 1;
            }
        }
        let due = per * (i + 1);
        let el = start.elapsed();
        if due > el {
            std::thread::sleep(due - el);
        }
    }
    println!("SENT {sent} {}", args.count);
    ExitCode::SUCCESS
}
