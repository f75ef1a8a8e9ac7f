//! Value parsers: `scanf`-style numbers, rates, priorities, core lists, `-scan` sizes
//! and raw-transport peers.

use crate::error::OptionError;

use super::model::{
    CpuAffinity, Priority, RateMethod, ThreadPriorities, DEFAULT_SCAN_SIZES, MAX_DATA_LEN,
    OVERHEAD_BYTES,
};

/// Why a numeric value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumError {
    /// Not a number at all, or digits followed by anything else (`100abc`, `1.5`).
    NotANumber,
    /// A negative number (`-5`).
    Negative,
    /// More digits than a 64-bit unsigned number holds.
    TooLarge,
}

impl NumError {
    /// The reason printed after the value.
    pub fn reason(self) -> &'static str {
        match self {
            NumError::NotANumber => "expected a non-negative whole number, with nothing after it",
            NumError::Negative => "negative values are not allowed",
            NumError::TooLarge => "value out of range",
        }
    }
}

/// Reads a whole unsigned number: an optional `+` then decimal digits, nothing else.
///
/// Unlike `scanf("%llu")` (which RTI uses and which stops at the first non-digit, so
/// `100abc` reads as 100), trailing characters are refused: a typo must not silently
/// change the test.
pub fn scan_u64(s: &str) -> Result<u64, NumError> {
    if s.starts_with('-') && s[1..].bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return Err(NumError::Negative);
    }
    let t = s.strip_prefix('+').unwrap_or(s);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NumError::NotANumber);
    }
    t.parse().map_err(|_| NumError::TooLarge)
}

/// Whether an argument is a negative number (which can only be a value, never an option).
pub fn is_negative_number(s: &str) -> bool {
    s.strip_prefix('-')
        .and_then(|t| t.bytes().next())
        .is_some_and(|b| b.is_ascii_digit() || b == b'.')
}

pub(super) fn num(option: &'static str, v: &str, min: u64, max: u64) -> Result<u64, OptionError> {
    let bad = |reason| OptionError::BadValue {
        option,
        value: v.to_string(),
        reason,
    };
    let n = scan_u64(v).map_err(|e| match e {
        NumError::Negative => OptionError::Negative {
            option,
            value: v.to_string(),
        },
        e => bad(e.reason()),
    })?;
    if n < min || n > max {
        return Err(bad("value out of range"));
    }
    Ok(n)
}

pub(super) fn num32(option: &'static str, v: &str, min: u64, max: u64) -> Result<u32, OptionError> {
    // max is always <= u32::MAX at the call sites.
    num(option, v, min, max.min(u64::from(u32::MAX))).map(|n| n as u32)
}

pub(super) fn parse_rate_method(
    option: &'static str,
    v: &str,
) -> Result<(u64, RateMethod), OptionError> {
    let bad = |reason| OptionError::BadValue {
        option,
        value: v.to_string(),
        reason,
    };
    let (n, method) = v
        .split_once(':')
        .ok_or_else(|| bad("expected <rate>:spin or <rate>:sleep"))?;
    let method = match method {
        "spin" => RateMethod::Spin,
        "sleep" => RateMethod::Sleep,
        _ => return Err(bad("the method must be 'spin' or 'sleep'")),
    };
    let n = scan_u64(n).map_err(|e| match e {
        NumError::Negative => bad("the rate must not be negative"),
        NumError::TooLarge => bad("value out of range"),
        NumError::NotANumber => bad("expected <rate>:spin or <rate>:sleep"),
    })?;
    Ok((n, method))
}

pub(super) fn parse_priority(v: &str, part: &str) -> Result<Priority, OptionError> {
    match part {
        "h" | "H" => Ok(Priority::High),
        "n" | "N" => Ok(Priority::Normal),
        "l" | "L" => Ok(Priority::Low),
        _ => {
            let n = part
                .parse::<i32>()
                .ok()
                .filter(|n| (0..=99).contains(n))
                .ok_or_else(|| OptionError::BadValue {
                    option: "-threadPriorities",
                    value: v.to_string(),
                    reason: "expected X:Y:Z with each a priority 0-99 or h/n/l",
                })?;
            Ok(Priority::Value(n))
        }
    }
}

/// Parses the `-scan` size list (`s1:s2:...`, empty = the default list), sorted
/// ascending without duplicates.
pub(super) fn parse_scan(v: &str) -> Result<Vec<u64>, OptionError> {
    if v.is_empty() {
        return Ok(DEFAULT_SCAN_SIZES.to_vec());
    }
    let mut sizes = Vec::new();
    for part in v.split(':') {
        let n = scan_u64(part)
            .ok()
            .filter(|n| (OVERHEAD_BYTES..=MAX_DATA_LEN).contains(n))
            .ok_or_else(|| OptionError::BadValue {
                option: "-scan",
                value: v.to_string(),
                reason: "expected sizes s1:s2:... each between 28 and 2147482620",
            })?;
        sizes.push(n);
    }
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

pub(super) fn parse_priorities(v: &str) -> Result<ThreadPriorities, OptionError> {
    let parts: Vec<&str> = v.split(':').collect();
    if parts.len() != 3 {
        return Err(OptionError::BadValue {
            option: "-threadPriorities",
            value: v.to_string(),
            reason: "expected X:Y:Z with each a priority 0-99 or h/n/l",
        });
    }
    Ok(ThreadPriorities {
        main: parse_priority(v, parts[0])?,
        receive: parse_priority(v, parts[1])?,
        event: parse_priority(v, parts[2])?,
    })
}

/// Parses a core list `n`, `n-m` or `a,b,c-d` (empty = no change).
pub fn parse_core_list(v: &str, list: &str) -> Result<Vec<usize>, OptionError> {
    let bad = || OptionError::BadValue {
        option: "-threadCPUAffinity",
        value: v.to_string(),
        reason: "expected A:B:C:D, each a core list like 0, 1-3 or 0,2,4-5",
    };
    let mut cores = Vec::new();
    if list.is_empty() {
        return Ok(cores);
    }
    for item in list.split(',') {
        match item.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.parse().map_err(|_| bad())?;
                let b: usize = b.parse().map_err(|_| bad())?;
                if a > b || b >= 1024 {
                    return Err(bad());
                }
                cores.extend(a..=b);
            }
            None => {
                let a: usize = item.parse().map_err(|_| bad())?;
                if a >= 1024 {
                    return Err(bad());
                }
                cores.push(a);
            }
        }
    }
    Ok(cores)
}

pub(super) fn parse_affinity(v: &str) -> Result<CpuAffinity, OptionError> {
    let parts: Vec<&str> = v.split(':').collect();
    if parts.is_empty() || parts.len() > 4 {
        return Err(OptionError::BadValue {
            option: "-threadCPUAffinity",
            value: v.to_string(),
            reason: "expected A:B:C:D, each a core list like 0, 1-3 or 0,2,4-5",
        });
    }
    let get = |i: usize| parse_core_list(v, parts.get(i).copied().unwrap_or(""));
    Ok(CpuAffinity {
        main: get(0)?,
        receive: get(1)?,
        database: get(2)?,
        event: get(3)?,
    })
}

/// One raw-transport publisher peer: address and the subscriber ids it sends to, as RTI
/// Perftest reads `-peer` with `-rawTransport`: `ADDR` is subscriber id 0, `ADDR:ID` that
/// subscriber, `ADDR:FIRST-LAST` each id of the range (one send target per id). Ids are
/// not bounded by `-numSubscribers` (RTI sends to them all); whether every subscriber is
/// reached is checked with the whole list ([`raw_peer_coverage`]).
pub fn parse_raw_pub_peer(p: &str) -> Result<(std::net::Ipv4Addr, Vec<u32>), OptionError> {
    let bad = |reason| OptionError::BadValue {
        option: "-peer",
        value: p.to_string(),
        reason,
    };
    let (addr, ids) = match p.split_once(':') {
        None => (p, None),
        Some((a, ids)) => (a, Some(ids)),
    };
    let addr: std::net::Ipv4Addr = addr.parse().map_err(|_| bad("expected an IPv4 address"))?;
    let id = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|n| *n <= MAX_SUBSCRIBER_ID)
            .ok_or_else(|| bad("expected addr[:sid] or addr:first-last, ids 0-65534"))
    };
    let ids = match ids {
        None => vec![0],
        Some(ids) => {
            let (first, last) = match ids.split_once('-') {
                None => (id(ids)?, id(ids)?),
                Some((a, b)) => (id(a)?, id(b)?),
            };
            if first > last {
                return Err(bad(
                    "the first subscriber id of a range must not exceed the last",
                ));
            }
            (first..=last).collect()
        }
    };
    Ok((addr, ids))
}

/// Highest `-sidMultiSubTest` (and so raw peer id).
pub const MAX_SUBSCRIBER_ID: u32 = 65534;

/// The first subscriber id below `num_subscribers` that no `(address, id)` target reaches.
pub fn raw_peer_coverage(
    targets: &[(std::net::Ipv4Addr, u32)],
    num_subscribers: u32,
) -> Option<u32> {
    (0..num_subscribers).find(|s| !targets.iter().any(|(_, t)| t == s))
}

/// A TCP peer: `[N@]tcpv4_lan://ADDR[:PORT]` or `ADDR[:PORT]`, the port 7400 when not given
/// (RTI's default server port).
pub fn parse_tcp_peer(p: &str) -> Result<std::net::SocketAddrV4, OptionError> {
    parse_stream_peer(p, "tcpv4_lan")
}

/// A UDPv4_WAN peer: `[N@]udpv4_wan://ADDR[:PORT]` or `ADDR[:PORT]` (port 7400 when not given).
pub fn parse_wan_peer(p: &str) -> Result<std::net::SocketAddrV4, OptionError> {
    parse_stream_peer(p, "udpv4_wan")
}

/// `-transportPublicAddress ADDR[:PORT]`; the port is 0 (the host port) when not given.
pub(super) fn parse_wan_address(
    option: &'static str,
    v: &str,
) -> Result<std::net::SocketAddrV4, OptionError> {
    let bad = |reason| OptionError::BadValue {
        option,
        value: v.to_string(),
        reason,
    };
    let (ip, port) = match v.split_once(':') {
        Some((ip, port)) => (
            ip,
            port.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("expected a port in 1..=65535"))?,
        ),
        None => (v, 0),
    };
    let ip = ip
        .parse()
        .map_err(|_| bad("expected ADDR[:PORT] with an IPv4 address"))?;
    Ok(std::net::SocketAddrV4::new(ip, port))
}

/// A TLS peer: `[N@]tlsv4_lan://ADDR[:PORT]` or `ADDR[:PORT]` (port 7400 when not given).
pub fn parse_tls_peer(p: &str) -> Result<std::net::SocketAddrV4, OptionError> {
    parse_stream_peer(p, "tlsv4_lan")
}

fn parse_stream_peer(p: &str, scheme_name: &str) -> Result<std::net::SocketAddrV4, OptionError> {
    let bad = |reason| OptionError::BadValue {
        option: "-peer",
        value: p.to_string(),
        reason,
    };
    // RTI's peer descriptor: an optional participant-index limit before '@'.
    let (form, scheme_error) = match scheme_name {
        "tlsv4_lan" => (
            "expected [N@]tlsv4_lan://ADDR:PORT",
            "unknown scheme: with -transport TLS peers are tlsv4_lan://ADDR:PORT",
        ),
        "udpv4_wan" => (
            "expected [N@]udpv4_wan://ADDR:PORT",
            "unknown scheme: with -transport UDPv4_WAN peers are udpv4_wan://ADDR:PORT",
        ),
        _ => (
            "expected [N@]tcpv4_lan://ADDR:PORT",
            "unknown scheme: with -transport TCP peers are tcpv4_lan://ADDR:PORT",
        ),
    };
    let rest = match p.split_once('@') {
        Some((n, rest)) if n.parse::<u32>().is_ok() => rest,
        Some(_) => return Err(bad(form)),
        None => p,
    };
    let addr = match rest.split_once("://") {
        Some((scheme, addr)) if scheme.eq_ignore_ascii_case(scheme_name) => addr,
        Some(_) => return Err(bad(scheme_error)),
        None => rest,
    };
    let (ip, port) = match addr.split_once(':') {
        Some((ip, port)) => (
            ip,
            port.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("expected a port in 1..=65535"))?,
        ),
        None => (addr, 7400),
    };
    let ip: std::net::Ipv4Addr = ip.parse().map_err(|_| bad("expected an IPv4 address"))?;
    Ok(std::net::SocketAddrV4::new(ip, port))
}

/// The raw-transport subscriber's peer (the publisher address).
pub fn parse_raw_sub_peer(p: &str) -> Result<std::net::Ipv4Addr, OptionError> {
    let addr = p.split_once(':').map_or(p, |(a, _)| a);
    addr.parse().map_err(|_| OptionError::BadValue {
        option: "-peer",
        value: p.to_string(),
        reason: "expected an IPv4 address",
    })
}

/// The multicast groups of `-multicast` without `-multicastAddr`, as RTI Perftest's:
/// Throughput, Latency, Announcement.
pub const DEFAULT_MULTICAST_GROUPS: [std::net::Ipv4Addr; 3] = [
    std::net::Ipv4Addr::new(239, 255, 1, 1),
    std::net::Ipv4Addr::new(239, 255, 1, 2),
    std::net::Ipv4Addr::new(239, 255, 1, 100),
];

/// `-multicastAddr`: the Throughput, Latency and Announcement groups, given as one address
/// (Throughput; Latency and Announcement are the next two) or as three, comma-separated.
/// Every group is an IPv4 multicast address.
pub fn parse_multicast_addr(v: &str) -> Result<[std::net::Ipv4Addr; 3], OptionError> {
    let bad = |reason| OptionError::BadValue {
        option: "-multicastAddr",
        value: v.to_string(),
        reason,
    };
    let addrs: Vec<std::net::Ipv4Addr> = v
        .split(',')
        .map(|a| a.trim().parse())
        .collect::<Result<_, _>>()
        .map_err(|_| bad("expected one IPv4 multicast address, or three separated by commas"))?;
    if addrs.iter().any(|g| !g.is_multicast()) {
        return Err(bad(
            "not an IPv4 multicast address (224.0.0.0 to 239.255.255.255)",
        ));
    }
    let groups = match addrs[..] {
        [a] => {
            let next = |n: u32| {
                u32::from(a)
                    .checked_add(n)
                    .map(std::net::Ipv4Addr::from)
                    .filter(std::net::Ipv4Addr::is_multicast)
            };
            match (next(1), next(2)) {
                (Some(l), Some(an)) => [a, l, an],
                _ => {
                    return Err(bad(
                        "the Latency and Announcement groups (the next two addresses) leave the multicast range",
                    ))
                }
            }
        }
        [t, l, an] => [t, l, an],
        _ => {
            return Err(bad(
                "expected one IPv4 multicast address, or three separated by commas",
            ))
        }
    };
    if groups.iter().any(|g| !g.is_multicast()) {
        return Err(bad(
            "not an IPv4 multicast address (224.0.0.0 to 239.255.255.255)",
        ));
    }
    Ok(groups)
}
