//! `perftest_micro`: FerroDDS perftest in a small-footprint build, for constrained devices
//! and for the published tutorial's comparison with a "Micro" build. Same options, output
//! and wire protocol as `perftest` (they interoperate); what this build leaves out
//! (batching, DDS Security, network capture, the TCP, TLS, UDPv4_WAN and shared-memory
//! transports) is refused with a message naming the option.
#![forbid(unsafe_code)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ferrodds_perftest::run::run(&args));
}
