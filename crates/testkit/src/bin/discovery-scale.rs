//! Discovery at scale in the simulated network: `discovery-scale [N ...] [--endpoints E]
//! [--seconds S]` (defaults: 100 300 1000 participants, 20 endpoints each, 120 s of
//! virtual time) prints, per size, whether every matching pair matched and what discovery
//! cost per participant, and how that cost grew from the previous size relative to the
//! number of participants (1.0 = linear per participant).

use std::time::Duration;

use ferrodds_testkit::scale::discovery_run;

fn main() {
    let mut sizes = Vec::new();
    let mut endpoints = 20;
    let mut seconds = 120;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> usize {
            args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                eprintln!("discovery-scale: {name} needs a number");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--endpoints" => endpoints = value("--endpoints"),
            "--seconds" => seconds = value("--seconds") as u64,
            n => match n.parse::<usize>() {
                Ok(n) if n >= 2 => sizes.push(n),
                _ => {
                    eprintln!(
                        "discovery-scale: '{n}' is not a participant count (>= 2) or an option (--endpoints E, --seconds S)"
                    );
                    std::process::exit(2)
                }
            },
        }
    }
    if endpoints < 2 || !endpoints.is_multiple_of(2) {
        eprintln!("discovery-scale: --endpoints must be even and at least 2");
        std::process::exit(2);
    }
    if sizes.is_empty() {
        sizes = vec![100, 300, 1000];
    }
    println!(
        "| participants | converged | virtual time | datagrams / participant | kB / participant | engine CPU / participant | growth per participant vs previous size (bytes, CPU) / size ratio |"
    );
    println!("|---:|---|---:|---:|---:|---:|---|");
    let mut prev: Option<ferrodds_testkit::scale::ScaleReport> = None;
    let mut failed = false;
    for n in sizes {
        let r = discovery_run(n, endpoints, 7, Duration::from_secs(seconds));
        failed |= !r.converged;
        let growth = prev.as_ref().map_or_else(
            || "–".to_string(),
            |p| {
                let size = n as f64 / p.participants as f64;
                let bytes = r.bytes_per_participant() / p.bytes_per_participant();
                let cpu =
                    r.cpu_per_participant().as_secs_f64() / p.cpu_per_participant().as_secs_f64();
                format!("{:.2}, {:.2}", bytes / size, cpu / size)
            },
        );
        println!(
            "| {n} | {} | {:.2} s | {:.0} | {:.1} | {:.2} ms | {growth} |",
            if r.converged { "yes" } else { "NO" },
            r.virtual_time.as_secs_f64(),
            r.datagrams_per_participant(),
            r.bytes_per_participant() / 1000.0,
            r.cpu_per_participant().as_secs_f64() * 1000.0,
        );
        eprintln!(
            "  {n}: resent DATA {}, lost bytes reported {}, pacing waits {}, congestion decreases {}, heartbeats skipped (unresponsive) {}, refused {}",
            r.resent_data, r.lost_bytes_reported, r.pacing_waits, r.congestion_decreases, r.unresponsive_heartbeats_skipped, r.refused
        );
        prev = Some(r);
    }
    if failed {
        std::process::exit(1);
    }
}
