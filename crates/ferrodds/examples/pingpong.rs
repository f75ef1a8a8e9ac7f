//! Round-trip latency between two participants in one process over loopback: a ping writer
//! and an echoing pong participant (the echo runs in the pong's receive thread through a
//! listener-free wait loop on its own thread). Prints min/p50/p90/p99/max of the one-way
//! latency (RTT/2) in microseconds.
//!
//! `cargo run --release -p ferrodds --example pingpong -- [samples] [reliable]`

use std::time::{Duration, Instant};

use ferrodds::cdr::types::TestData;
use ferrodds::{
    Config, DataReaderQos, DataWriterQos, DdsError, DomainParticipant, PublisherQos, SubscriberQos,
    TopicQos,
};

fn main() -> Result<(), DdsError> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let reliable = args.next().is_some_and(|a| a == "reliable");
    let (wq, rq) = if reliable {
        (
            DataWriterQos::default().reliable().keep_all(),
            DataReaderQos::default().reliable().keep_all(),
        )
    } else {
        (
            DataWriterQos::default().best_effort().keep_last(1),
            DataReaderQos::default().best_effort().keep_last(1),
        )
    };
    let ping = DomainParticipant::with_config(43, Config::loopback())?;
    let pong = DomainParticipant::with_config(43, Config::loopback())?;
    let (ping_pub, ping_sub) = (
        ping.create_publisher(PublisherQos::default())?,
        ping.create_subscriber(SubscriberQos::default())?,
    );
    let (pong_pub, pong_sub) = (
        pong.create_publisher(PublisherQos::default())?,
        pong.create_subscriber(SubscriberQos::default())?,
    );
    let ping_w = ping_pub.create_datawriter(
        &ping.create_topic::<TestData>("ping", TopicQos::default())?,
        wq.clone(),
    )?;
    let ping_r = ping_sub.create_datareader(
        &ping.create_topic::<TestData>("pong", TopicQos::default())?,
        rq.clone(),
    )?;
    let pong_w = pong_pub.create_datawriter(
        &pong.create_topic::<TestData>("pong", TopicQos::default())?,
        wq,
    )?;
    let pong_r = pong_sub.create_datareader(
        &pong.create_topic::<TestData>("ping", TopicQos::default())?,
        rq,
    )?;
    let t = Duration::from_secs(10);
    if !(ping_w.wait_for_matched(1, t)
        && pong_w.wait_for_matched(1, t)
        && ping_r.wait_for_matched(1, t)
        && pong_r.wait_for_matched(1, t))
    {
        return Err(DdsError::Timeout);
    }
    std::thread::sleep(Duration::from_millis(200));
    let echo = std::thread::spawn(move || -> Result<(), DdsError> {
        let mut left = n;
        while left > 0 {
            if !pong_r.wait_for_data(Duration::from_secs(2))? {
                return Err(DdsError::Timeout);
            }
            for s in pong_r.take()? {
                if let Some(d) = s.data {
                    pong_w.write(&d)?;
                    left -= 1;
                }
            }
        }
        Ok(())
    });
    let mut lat = Vec::with_capacity(n);
    let sample = TestData {
        bin_data: vec![0; 4],
        ..TestData::default()
    };
    for i in 0..n {
        let mut s = sample.clone();
        s.seq_num = i as u32;
        let t0 = Instant::now();
        ping_w.write(&s)?;
        loop {
            if !ping_r.wait_for_data(Duration::from_secs(2))? {
                return Err(DdsError::Timeout);
            }
            if ping_r
                .take()?
                .iter()
                .any(|x| x.data.as_ref().is_some_and(|d| d.seq_num == i as u32))
            {
                break;
            }
        }
        lat.push(t0.elapsed() / 2);
    }
    echo.join().map_err(|_| DdsError::Error {
        what: "echo thread panicked",
    })??;
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e6;
    println!(
        "one-way latency (RTT/2) over {n} samples, {}: min {:.1} p50 {:.1} p90 {:.1} p99 {:.1} max {:.1} us",
        if reliable { "reliable" } else { "best effort" },
        pct(0.0),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
    Ok(())
}
