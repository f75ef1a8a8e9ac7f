//! FerroDDS shapes demo, modelled on the OMG interoperability `shape_main`.
//!
//! Publisher: `shapes -P -t Square -c BLUE` publishes a moving shape at `--rate` Hz.
//! Subscriber: `shapes -S -t Square` prints each received sample as
//! `<topic> <color> <x> <y> <size>` (and `<topic> <color> DISPOSED` for disposals).
//! Both exit after `--count` samples or `--duration` seconds, whichever comes first.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use ferrodds::cdr::types::ShapeType;
use ferrodds::{
    Config, DataReaderQos, DataWriterQos, DomainParticipant, Interface, PublisherQos,
    SubscriberQos, TopicQos,
};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Shape {
    Square,
    Circle,
    Triangle,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Square => "Square",
            Shape::Circle => "Circle",
            Shape::Triangle => "Triangle",
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DurabilityArg {
    /// TRANSIENT_LOCAL
    T,
    /// VOLATILE
    V,
}

/// FerroDDS shapes demo (OMG shape_main style).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Publish.
    #[arg(
        short = 'P',
        conflicts_with = "subscribe",
        required_unless_present = "subscribe"
    )]
    publish: bool,
    /// Subscribe.
    #[arg(short = 'S')]
    subscribe: bool,
    /// Topic (shape kind).
    #[arg(short = 't', value_enum, default_value = "square", ignore_case = true)]
    topic: Shape,
    /// Color (the instance key) of the published shape.
    #[arg(short = 'c', default_value = "BLUE")]
    color: String,
    /// Reliable (default).
    #[arg(short = 'r', conflicts_with = "best_effort")]
    reliable: bool,
    /// Best effort.
    #[arg(short = 'b')]
    best_effort: bool,
    /// Domain id.
    #[arg(short = 'd', default_value_t = 0)]
    domain: u32,
    /// Durability: t = TRANSIENT_LOCAL, v = VOLATILE.
    #[arg(short = 'D', value_enum, default_value = "v")]
    durability: DurabilityArg,
    /// Shape size.
    #[arg(short = 's', default_value_t = 30)]
    size: i32,
    /// KEEP_ALL history (default KEEP_LAST 1 per instance, or KEEP_ALL with --sequence).
    #[arg(long)]
    keep_all: bool,
    /// Stop after this many samples (published or received).
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this many seconds (`inf`: only `--count` ends the run).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Publication rate in samples per second (0 = as fast as possible).
    #[arg(long, default_value_t = 25.0)]
    rate: f64,
    /// Publisher: wait for a matched reader before publishing.
    #[arg(long)]
    wait_matched: bool,
    /// Sequence mode: the publisher puts the sample number in x (y = 0) and uses KEEP_ALL;
    /// the subscriber checks that x increases by one and prints a summary.
    #[arg(long)]
    sequence: bool,
    /// Subscriber: print only the final summary line.
    #[arg(long)]
    quiet: bool,
    /// Network interface (name or IPv4 address).
    #[arg(long)]
    interface: Option<String>,
    /// Unicast discovery peer (repeatable).
    #[arg(long = "peer")]
    peers: Vec<Ipv4Addr>,
    /// Disable multicast.
    #[arg(long)]
    no_multicast: bool,
    /// Write a pcapng capture of all traffic to this file.
    #[arg(long)]
    capture: Option<PathBuf>,
    /// Largest RTPS message in bytes (e.g. 1400 to avoid IP fragmentation on lossy links).
    #[arg(long)]
    max_message_size: Option<usize>,
    /// Shared memory beside UDPv4 (FerroDDS peers on this host then use it for user data).
    #[arg(long)]
    shared_memory: bool,
    /// Lease duration announced to peers, in seconds (default 20): how long after this
    /// process dies its peers forget it.
    #[arg(long)]
    lease: Option<f64>,
    /// DDS Security: a folder laid out as perftest's `resource/secure` (`cacert.pem`,
    /// `<identity>.pem`, `<identity>key.pem`, `signed_PerftestPermissions<Pub|Sub>.xml`).
    #[arg(long, requires = "governance")]
    secure_dir: Option<PathBuf>,
    /// DDS Security: the governance file (in `--secure-dir`, or a path).
    #[arg(long, requires = "secure_dir")]
    governance: Option<PathBuf>,
    /// DDS Security: the identity in `--secure-dir` (`pub` or `sub`).
    #[arg(long, default_value = "pub", value_parser = ["pub", "sub"])]
    identity: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shapes: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn config(args: &Args) -> Result<Config, ferrodds::DdsError> {
    let mut c = Config::from_env()?;
    if let Some(i) = &args.interface {
        c = c.interface(Interface::parse(i));
    }
    if !args.peers.is_empty() {
        c = c.initial_peers(args.peers.clone());
    }
    if args.no_multicast {
        c = c.multicast(false);
    }
    if let Some(m) = args.max_message_size {
        c = c.max_message_size(m);
    }
    if let Some(l) = args.lease {
        let lease =
            Duration::try_from_secs_f64(l).map_err(|_| ferrodds::DdsError::BadParameter {
                what: "--lease must be a non-negative number of seconds",
            })?;
        c = c.lease_duration(lease);
    }
    c = c
        .shared_memory(args.shared_memory)
        .capture_file(args.capture.clone())
        .spdp_period(Duration::from_secs(1));
    if let (Some(dir), Some(gov)) = (&args.secure_dir, &args.governance) {
        let f = |p: &std::path::Path| format!("file:{}", dir.join(p).display());
        let id = args.identity.as_str();
        let perm = if id == "pub" { "Pub" } else { "Sub" };
        c = c.security(
            ferrodds::SecurityConfig::new()
                .identity_ca(f("cacert.pem".as_ref()))
                .identity_certificate(f(format!("{id}.pem").as_ref()))
                .private_key(f(format!("{id}key.pem").as_ref()))
                .permissions_ca(f("cacert.pem".as_ref()))
                .governance(f(gov))
                .permissions(f(format!("signed_PerftestPermissions{perm}.xml").as_ref())),
        );
    }
    Ok(c)
}

fn run(args: &Args) -> Result<ExitCode, ferrodds::DdsError> {
    // `--duration inf` (or any duration past what a clock can hold): until `--count`.
    let deadline = Duration::try_from_secs_f64(args.duration.max(0.0))
        .ok()
        .and_then(|d| Instant::now().checked_add(d))
        .unwrap_or_else(far_future);
    let dp = DomainParticipant::with_config(args.domain, config(args)?)?;
    let topic = dp.create_topic::<ShapeType>(args.topic.name(), TopicQos::default())?;
    let keep_all = args.keep_all || args.sequence;
    if args.publish {
        let mut q = DataWriterQos::default().max_blocking_time(Duration::from_secs(1));
        q = if args.best_effort {
            q.best_effort()
        } else {
            q.reliable()
        };
        if matches!(args.durability, DurabilityArg::T) {
            q = q.transient_local();
        }
        if keep_all {
            q = q.keep_all();
        }
        let w = dp
            .create_publisher(PublisherQos::default())?
            .create_datawriter(&topic, q)?;
        if args.wait_matched {
            let left = deadline.saturating_duration_since(Instant::now());
            if !w.wait_for_matched(1, left) {
                eprintln!("shapes: no reader matched");
                return Ok(ExitCode::from(2));
            }
            eprintln!("shapes: matched");
            // Matching is asymmetric: give the remote reader time to match us as well, since
            // a VOLATILE reader ignores samples written before it matched the writer.
            std::thread::sleep(Duration::from_millis(300));
        }
        let period = if args.rate > 0.0 {
            Duration::from_secs_f64(1.0 / args.rate)
        } else {
            Duration::ZERO
        };
        let (mut x, mut y, mut dx, mut dy) = (10i32, 40i32, 3i32, 2i32);
        let mut n: u64 = 0;
        let mut next = Instant::now();
        while Instant::now() < deadline && args.count.is_none_or(|c| n < c) {
            let s = if args.sequence {
                ShapeType {
                    color: args.color.clone(),
                    x: i32::try_from(n).unwrap_or(i32::MAX),
                    y: 0,
                    shapesize: args.size,
                }
            } else {
                x += dx;
                y += dy;
                if !(0..=240).contains(&x) {
                    dx = -dx;
                }
                if !(0..=260).contains(&y) {
                    dy = -dy;
                }
                ShapeType {
                    color: args.color.clone(),
                    x,
                    y,
                    shapesize: args.size,
                }
            };
            match w.write(&s) {
                Ok(()) => n += 1,
                Err(ferrodds::DdsError::Timeout) => continue,
                Err(e) => return Err(e),
            }
            if !period.is_zero() {
                next += period;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                }
            }
        }
        if !args.best_effort {
            let left = deadline.saturating_duration_since(Instant::now());
            if w.wait_for_acknowledgments(left.max(Duration::from_millis(100)))
                .is_err()
            {
                eprintln!("shapes: not all samples acknowledged");
            }
        }
        eprintln!("shapes: published {n}");
        println!("PUBLISHED {n}");
        return Ok(ExitCode::SUCCESS);
    }

    let mut q = DataReaderQos::default();
    q = if args.best_effort {
        q.best_effort()
    } else {
        q.reliable()
    };
    if matches!(args.durability, DurabilityArg::T) {
        q = q.transient_local();
    }
    if keep_all {
        q = q.keep_all();
    }
    let r = dp
        .create_subscriber(SubscriberQos::default())?
        .create_datareader(&topic, q)?;
    let mut received: u64 = 0;
    let mut in_order = true;
    let mut expected_x: i64 = 0;
    let mut lost_or_reordered: u64 = 0;
    'outer: while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        r.wait_for_data(left.min(Duration::from_millis(100)))?;
        for s in r.take()? {
            match s.data {
                Some(d) => {
                    received += 1;
                    if args.sequence {
                        if i64::from(d.x) != expected_x {
                            in_order = false;
                            lost_or_reordered += 1;
                        }
                        expected_x = i64::from(d.x) + 1;
                    }
                    if !args.quiet {
                        println!(
                            "{} {} {} {} {}",
                            args.topic.name(),
                            d.color,
                            d.x,
                            d.y,
                            d.shapesize
                        );
                    }
                }
                None => {
                    if !args.quiet {
                        println!("{} {:?}", args.topic.name(), s.info.instance_state);
                    }
                }
            }
            if args.count.is_some_and(|c| received >= c) {
                break 'outer;
            }
        }
    }
    println!("SUMMARY received={received} in_order={in_order} gaps={lost_or_reordered}");
    if args.count.is_some_and(|c| received < c) {
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// A deadline that never comes in practice (a hundred years away).
fn far_future() -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_secs(100 * 365 * 86_400))
        .unwrap_or(now)
}
