//! Two participants in one process exchange a few shapes over loopback.
//!
//! `cargo run -p ferrodds --example hello`

use std::time::Duration;

use ferrodds::cdr::types::ShapeType;
use ferrodds::{
    Config, DataReaderQos, DataWriterQos, DdsError, DomainParticipant, PublisherQos, SubscriberQos,
    TopicQos,
};

fn main() -> Result<(), DdsError> {
    // Loopback only: 127.0.0.1, no multicast, unicast discovery to 127.0.0.1.
    let a = DomainParticipant::with_config(42, Config::loopback())?;
    let b = DomainParticipant::with_config(42, Config::loopback())?;
    let writer = a
        .create_publisher(PublisherQos::default())?
        .create_datawriter(
            &a.create_topic::<ShapeType>("Square", TopicQos::default())?,
            DataWriterQos::default().keep_all(),
        )?;
    let reader = b
        .create_subscriber(SubscriberQos::default())?
        .create_datareader(
            &b.create_topic::<ShapeType>("Square", TopicQos::default())?,
            DataReaderQos::default().reliable().keep_all(),
        )?;
    if !writer.wait_for_matched(1, Duration::from_secs(5)) {
        return Err(DdsError::Timeout);
    }
    for i in 0..5 {
        writer.write(&ShapeType {
            color: "BLUE".into(),
            x: 10 * i,
            y: 20 * i,
            shapesize: 30,
        })?;
    }
    writer.wait_for_acknowledgments(Duration::from_secs(5))?;
    for s in reader.take()? {
        if let Some(d) = s.data {
            println!("Square {} {} {} {}", d.color, d.x, d.y, d.shapesize);
        }
    }
    Ok(())
}
