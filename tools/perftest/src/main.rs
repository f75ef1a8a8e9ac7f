//! `perftest`: RTI Perftest-compatible latency and throughput tool (see the library docs).
#![forbid(unsafe_code)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ferrodds_perftest::run::run(&args));
}
