//! Echoes `ShapeType` samples between topics on loopback, for interop tests of other
//! language bindings (the C# tests run it): every sample taken from topic `<in>` is written
//! back on topic `<out>` with `x + 1000` (so the caller sees that Rust decoded it), then the
//! program prints `echoed <color> <x> <y> <shapesize>`. Reliable, KEEP_ALL on both topics.
//! Exits after `count` samples, or with an error when none arrives for 10 s.
//!
//! `cargo run -p ferrodds --example shape_echo -- <domain> <in> <out> <count>`

use std::time::Duration;

use ferrodds::cdr::types::ShapeType;
use ferrodds::{
    Config, DataReaderQos, DataWriterQos, DdsError, DomainParticipant, PublisherQos, SubscriberQos,
    TopicQos,
};

fn main() -> Result<(), DdsError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 4 {
        eprintln!("usage: shape_echo <domain> <in topic> <out topic> <count>");
        std::process::exit(2);
    }
    let domain: u32 = args[0].parse().map_err(|_| DdsError::BadParameter {
        what: "domain: not an unsigned integer",
    })?;
    let count: usize = args[3].parse().map_err(|_| DdsError::BadParameter {
        what: "count: not an unsigned integer",
    })?;
    let p = DomainParticipant::with_config(domain, Config::loopback())?;
    let reader = p
        .create_subscriber(SubscriberQos::default())?
        .create_datareader(
            &p.create_topic::<ShapeType>(&args[1], TopicQos::default())?,
            DataReaderQos::default().reliable().keep_all(),
        )?;
    let writer = p
        .create_publisher(PublisherQos::default())?
        .create_datawriter(
            &p.create_topic::<ShapeType>(&args[2], TopicQos::default())?,
            DataWriterQos::default().reliable().keep_all(),
        )?;
    println!("ready");
    let t = Duration::from_secs(10);
    if !writer.wait_for_matched(1, t) {
        return Err(DdsError::Timeout);
    }
    let mut left = count;
    while left > 0 {
        if !reader.wait_for_data(t)? {
            return Err(DdsError::Timeout);
        }
        for s in reader.take()? {
            if let Some(mut d) = s.data {
                println!("echoed {} {} {} {}", d.color, d.x, d.y, d.shapesize);
                d.x += 1000;
                writer.write(&d)?;
                left -= 1;
            }
        }
    }
    // Let the reliable echoes reach the reader before the participant goes away.
    writer.wait_for_acknowledgments(t)
}
