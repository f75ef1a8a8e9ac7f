//! `spdp-flood`: announces many fake participants to SPDP ports, as a hostile or broken host
//! on the network would, to test that a participant's user data keeps flowing (issue 18).
//!
//! Each fake participant is a real SPDP announcement (made by the sans-IO engine) with its GUID
//! prefix replaced by a distinct one; its metatraffic and user locators are 127.0.0.1 with a
//! port nobody listens on (`--bogus-port`), so whatever a victim sends to them stays on
//! loopback and is refused there. `--bogus-address` names another locator address: use it only
//! inside a network namespace, where what the victim sends there cannot leave. Only loopback
//! targets are accepted.
//!
//! With `--endpoints`, one fake participant announces `--count` SEDP publications instead
//! (50 per datagram, its SPDP announcement repeated every 500 ms).
//!
//! ```text
//! spdp-flood --target 127.0.0.1:7410 --target 127.0.0.1:7412 --count 50000 --seconds 10
//! spdp-flood --target 127.0.0.1:7410 --endpoints --count 50000 --seconds 10
//! ```
//! Prints `SENT <datagrams> <participants or endpoints>` at the end.
#![forbid(unsafe_code)]

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ferrodds_testkit::flood::{SedpFlood, SpdpFlood};

struct Args {
    targets: Vec<SocketAddrV4>,
    count: u32,
    seconds: f64,
    bogus_port: u16,
    bogus_address: Ipv4Addr,
    lease: f64,
    domain: u32,
    endpoints: bool,
}

fn usage() -> &'static str {
    "usage: spdp-flood --target 127.0.0.1:PORT [--target ...] [--count N (50000)] \
     [--seconds S (10)] [--bogus-port P (9)] [--bogus-address A (127.0.0.1)] [--lease S (20)] [--domain D (0)] [--endpoints]"
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        targets: Vec::new(),
        count: 50_000,
        seconds: 10.0,
        bogus_port: 9,
        bogus_address: Ipv4Addr::LOCALHOST,
        lease: 20.0,
        domain: 0,
        endpoints: false,
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
            "--bogus-address" => {
                let s = v()?;
                a.bogus_address = s.parse().map_err(|e| format!("--bogus-address {s}: {e}"))?
            }
            "--lease" => {
                a.lease = v()?.parse().map_err(|e| format!("--lease: {e}"))?;
                if !(a.lease.is_finite() && a.lease > 0.0 && a.lease < 1e6) {
                    return Err("--lease must be a number of seconds".into());
                }
            }
            "--domain" => a.domain = v()?.parse().map_err(|e| format!("--domain: {e}"))?,
            "--endpoints" => a.endpoints = true,
            "-h" | "--help" => return Err(usage().into()),
            _ => return Err(format!("unknown option {k}\n{}", usage())),
        }
    }
    if a.targets.is_empty() {
        return Err(format!("no --target\n{}", usage()));
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("spdp-flood: {e}");
            return ExitCode::from(2);
        }
    };
    if args.endpoints {
        return sedp_flood(&args);
    }
    let Some(mut flood) = SpdpFlood::new(
        args.domain,
        (args.bogus_address, args.bogus_port),
        Duration::from_secs_f64(args.lease),
    ) else {
        eprintln!("spdp-flood: could not make an SPDP announcement");
        return ExitCode::FAILURE;
    };
    let Some(sock) = bind() else {
        return ExitCode::FAILURE;
    };
    let start = Instant::now();
    let per = Duration::from_secs_f64(args.seconds / f64::from(args.count.max(1)));
    let mut sent = 0u64;
    for i in 0..args.count {
        let msg = flood.announcement(i);
        for t in &args.targets {
            // (A refused datagram is what a flood expects; keep going.)
            if sock.send_to(msg, t).is_ok() {
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

fn bind() -> Option<UdpSocket> {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| eprintln!("spdp-flood: bind: {e}"))
        .ok()
}

/// `--endpoints`: one fake participant announcing `--count` publications.
fn sedp_flood(args: &Args) -> ExitCode {
    const PER_DATAGRAM: u32 = 50;
    let Some(mut flood) = SedpFlood::new(
        args.domain,
        (args.bogus_address, args.bogus_port),
        Duration::from_secs_f64(args.lease),
    ) else {
        eprintln!("spdp-flood: could not make an SEDP announcement");
        return ExitCode::FAILURE;
    };
    let Some(sock) = bind() else {
        return ExitCode::FAILURE;
    };
    let mut buf = vec![0u8; 65_000];
    let datagrams = args.count.div_ceil(PER_DATAGRAM).max(1);
    let per = Duration::from_secs_f64(args.seconds / f64::from(datagrams));
    let start = Instant::now();
    let mut announced: Option<Instant> = None;
    let mut sent = 0u64;
    for d in 0..datagrams {
        if announced.is_none_or(|t| t.elapsed() >= Duration::from_millis(500)) {
            for t in &args.targets {
                let _ = sock.send_to(flood.announcement(), t);
            }
            if announced.is_none() {
                // Let the announcement be matched before its endpoints arrive.
                std::thread::sleep(Duration::from_millis(200));
            }
            announced = Some(Instant::now());
        }
        let first = d * PER_DATAGRAM;
        let n = PER_DATAGRAM.min(args.count - first);
        let Some(len) = flood.publications(first, n, &mut buf) else {
            eprintln!("spdp-flood: a datagram of {n} publications does not fit");
            return ExitCode::FAILURE;
        };
        for t in &args.targets {
            if sock.send_to(&buf[..len], t).is_ok() {
                sent += 1;
            }
        }
        let due = per * (d + 1);
        let el = start.elapsed();
        if due > el {
            std::thread::sleep(due - el);
        }
    }
    println!("SENT {sent} {}", args.count);
    ExitCode::SUCCESS
}
